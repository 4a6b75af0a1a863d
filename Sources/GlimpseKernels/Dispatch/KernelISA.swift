#if arch(x86_64)
import CGlimpseSIMD
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The instruction sets the kernels have variants for, lowest first. `portable` is plain Swift SIMD
/// code, the reference for any other architecture.
public enum KernelISA: String, CaseIterable, Comparable, Sendable {
    case portable
    case avx2
    case avx512
    case avx512vnni

    var rank: Int {
        switch self {
        case .portable: 0
        case .avx2: 1
        case .avx512: 2
        case .avx512vnni: 3
        }
    }

    public static func < (a: KernelISA, b: KernelISA) -> Bool { a.rank < b.rank }

    /// What the CPU must have to run this variant.
    public var requirement: CPUFeatures {
        switch self {
        case .portable: []
        case .avx2: .avx2
        case .avx512: [.avx2, .avx512f, .avx512bw]
        case .avx512vnni: [.avx2, .avx512f, .avx512bw, .avx512vnni]
        }
    }
}

/// Instruction-set features of the CPU the process runs on (cpuid, and `xgetbv` for the register
/// state the operating system enables).
public struct CPUFeatures: OptionSet, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let avx2 = CPUFeatures(rawValue: 1 << 0)
    public static let avx512f = CPUFeatures(rawValue: 1 << 1)
    public static let avx512bw = CPUFeatures(rawValue: 1 << 2)
    public static let avx512vnni = CPUFeatures(rawValue: 1 << 3)
    public static let avx512vbmi = CPUFeatures(rawValue: 1 << 4)
    public static let avxvnni = CPUFeatures(rawValue: 1 << 5)

    /// This CPU's features, read once.
    public static let current: CPUFeatures = {
        #if arch(x86_64)
        CPUFeatures(rawValue: glimpse_cpu_features())
        #else
        []
        #endif
    }()

    public var description: String {
        let names: [(CPUFeatures, String)] = [(.avx2, "avx2+fma"), (.avx512f, "avx512f"), (.avx512bw, "avx512bw"),
                                             (.avx512vnni, "avx512_vnni"), (.avx512vbmi, "avx512_vbmi"), (.avxvnni, "avx_vnni")]
        let listed = names.filter { contains($0.0) }.map(\.1)
        return listed.isEmpty ? "no AVX2" : listed.joined(separator: " ")
    }
}

/// The kernel variant every operator uses, chosen once per process: the best one this binary has
/// that the CPU supports, or the one `GLIMPSE_ISA` names (a lower one, for tests and benchmarks).
public enum KernelDispatch {
    public struct UnsupportedISA: Error, CustomStringConvertible {
        public let description: String
    }

    /// The variants compiled into this binary. The build's target CPU decides which: the AVX2 and
    /// portable paths always, the AVX-512 and VNNI kernels only in builds for a CPU that has them.
    public static let compiled: [KernelISA] = {
        var isas: [KernelISA] = [.portable]
        #if GLIMPSE_AVX2
        isas.append(.avx2)
        #endif
        #if GLIMPSE_AVX512
        isas.append(.avx512)
        #endif
        #if GLIMPSE_VNNI
        isas.append(.avx512vnni)
        #endif
        return isas
    }()

    /// The variant for a requested name (nil: the best available) on a CPU with `features`.
    public static func choose(requested: String?, features: CPUFeatures = .current) throws -> KernelISA {
        let usable = compiled.filter { features.contains($0.requirement) }
        guard let requested, !requested.isEmpty else { return usable.max() ?? .portable }
        guard let isa = KernelISA(rawValue: requested.lowercased()) else {
            throw UnsupportedISA(description: "GLIMPSE_ISA=\(requested) is not one of "
                + KernelISA.allCases.map(\.rawValue).joined(separator: ", "))
        }
        guard features.contains(isa.requirement) else {
            throw UnsupportedISA(description: "GLIMPSE_ISA=\(requested): this CPU lacks it (its features: \(features))")
        }
        guard compiled.contains(isa) else {
            throw UnsupportedISA(description: "GLIMPSE_ISA=\(requested): this binary has no \(requested) kernels "
                + "(it has \(compiled.map(\.rawValue).joined(separator: ", ")))")
        }
        return isa
    }

    /// `GLIMPSE_ISA`, or nil.
    public static var requestedISA: String? {
        guard let value = getenv("GLIMPSE_ISA") else { return nil }
        return String(cString: value)
    }

    /// Checks `GLIMPSE_ISA` against the CPU; executables call it at start-up, so a wrong value is a
    /// clear error there, not an illegal instruction later.
    public static func validate() throws -> KernelISA { try choose(requested: requestedISA) }

    /// The variants this binary has that this CPU can run, lowest first.
    public static let available: [KernelISA] = compiled.filter { CPUFeatures.current.contains($0.requirement) }

    /// The variant in use, chosen once at start-up. A `GLIMPSE_ISA` the CPU cannot run falls back to
    /// the best available here (`validate` reports it at start-up). Only `withISA` changes it.
    public private(set) static var isa: KernelISA = (try? validate()) ?? (try? choose(requested: nil)) ?? .portable

    /// Runs `body` with the kernels of `variant` (one of `available`), for tests that hold every variant
    /// against the scalar reference. Not for concurrent use: the choice is process-wide.
    public static func withISA<T>(_ variant: KernelISA, _ body: () throws -> T) rethrows -> T {
        precondition(available.contains(variant), "\(variant) is not available here")
        let saved = isa
        isa = variant
        defer { isa = saved }
        return try body()
    }

    /// Whether the AVX-512 kernels run (the 6 × 32 GEMM tile, AVX-512 int8 paths).
    @inline(__always)
    public static var usesAVX512: Bool { isa >= .avx512 }
    /// Whether the VNNI int8 kernels run.
    @inline(__always)
    public static var usesVNNI: Bool { isa >= .avx512vnni }
}
