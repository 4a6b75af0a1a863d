import GlimpseKernels

/// What the engine runs on, for logs, `server.stats`, `glimpse bench` and the build-info metric.
public enum EngineInfo {
    /// The kernel variant in use (`KernelDispatch.isa`): portable, avx2, avx512 or avx512vnni.
    public static var isa: String { KernelDispatch.isa.rawValue }
    /// The variants this binary has.
    public static var compiledISAs: [String] { KernelDispatch.compiled.map(\.rawValue) }
    /// The CPU's instruction-set features (cpuid and xgetbv).
    public static var cpuFeatures: String { CPUFeatures.current.description }

    /// Checks `GLIMPSE_ISA` against the CPU and this binary: executables call it first, so a variant the
    /// CPU lacks is a clear error at start-up.
    public static func validateISA() throws { _ = try KernelDispatch.validate() }
}
