import GlimpseTensor

/// Shape and element type of a value at plan time (all dimensions concrete).
public struct ValueType: Hashable, CustomStringConvertible {
    public var shape: [Int]
    public var dtype: DType
    public init(_ shape: [Int], _ dtype: DType = .float32) {
        self.shape = shape
        self.dtype = dtype
    }
    public var count: Int { shape.reduce(1, *) }
    public var description: String { "\(dtype.rawValue)[\(shape.map(String.init).joined(separator: ","))]" }
    /// Placeholder type of an absent optional input.
    public static let absent = ValueType([], .float32)
}

/// Buffers and resources one operator instance runs with, fixed at plan time.
public struct KernelContext {
    /// Input tensors (nil for an absent optional input). Constants are their own tensors.
    public var inputs: [Tensor?]
    public var outputs: [Tensor]
    /// Scratch of at least `workspaceFloats` floats, 64-byte aligned, shared by all kernels of a plan.
    public var workspace: UnsafeMutablePointer<Float>
    public var threads: Int

    public func input(_ i: Int) -> Tensor? { i < inputs.count ? inputs[i] : nil }
}

/// A prepared computation: pointers bound, nothing to allocate. `run` may be called many times.
public protocol Kernel {
    func run(_ pool: ThreadPool)
}

/// An engine operator: the "operator" layer between graph and micro-kernels.
///
/// Lifecycle: `prepare` once at load (pack weights), `inferTypes` + `makeKernel` once per batch
/// size (plan), `Kernel.run` per request.
public protocol Operator: AnyObject {
    var opType: String { get }
    /// Output types from input types. `constants[i]` holds input i's data when it is known.
    func inferTypes(_ inputs: [ValueType], constants: [Tensor?]) throws -> [ValueType]
    func makeKernel(_ ctx: KernelContext) throws -> any Kernel
    /// Scratch floats the kernel needs for these shapes.
    func workspaceFloats(_ inputs: [ValueType], _ outputs: [ValueType], threads: Int) -> Int
    /// Outputs that can be computed from shapes alone (e.g. `Shape`), or nil.
    func foldFromTypes(_ inputs: [ValueType]) -> [Tensor]?
    /// When true, output 0 is a view of input 0's buffer with a new shape (Reshape, Flatten, ...).
    var isView: Bool { get }
    /// Called once after the load-time passes with the constant inputs (pack weights here).
    func prepare(constants: [Tensor?]) throws
    /// Floating-point operations (multiply-add = 2) for these shapes, for benchmarks.
    func flops(_ inputs: [ValueType], _ outputs: [ValueType]) -> Int
    /// An input whose buffer output 0 may take over when the node is that input's last reader: the
    /// kernel reads each of its elements only where, and before, it writes the same element of the
    /// output. Nil (the default) when there is none.
    func inPlaceInput(_ inputs: [ValueType]) -> Int?
    /// Whether, once prepared, the operator runs from its own packed copy of constant input `input`
    /// and never reads the graph's data for it again (`ReleaseConstants` then drops that data).
    func packedAway(input: Int) -> Bool
}

extension Operator {
    public func workspaceFloats(_ inputs: [ValueType], _ outputs: [ValueType], threads: Int) -> Int { 0 }
    public func foldFromTypes(_ inputs: [ValueType]) -> [Tensor]? { nil }
    public var isView: Bool { false }
    public func prepare(constants: [Tensor?]) throws {}
    public func flops(_ inputs: [ValueType], _ outputs: [ValueType]) -> Int { 0 }
    public func inPlaceInput(_ inputs: [ValueType]) -> Int? { nil }
    public func packedAway(input: Int) -> Bool { false }
}

/// A kernel built from a closure, for simple operators.
public struct ClosureKernel: Kernel {
    let body: (ThreadPool) -> Void
    public init(_ body: @escaping (ThreadPool) -> Void) { self.body = body }
    public func run(_ pool: ThreadPool) { body(pool) }
}

/// A kernel that does nothing (views, folded values).
public struct NoKernel: Kernel {
    public init() {}
    public func run(_ pool: ThreadPool) {}
}

extension Tensor {
    /// float32 element pointer; the caller guarantees the dtype.
    @inlinable
    public var f32: UnsafeMutablePointer<Float> { rawPointer.assumingMemoryBound(to: Float.self) }

    /// Integer values of an int64/int32 tensor (shape inputs, axes, indices).
    public func int64Values() -> [Int64] {
        switch dtype {
        case .int64: return Array(UnsafeBufferPointer(start: pointer(as: Int64.self), count: count))
        case .int32: return (0..<count).map { Int64(pointer(as: Int32.self)[$0]) }
        default: return floats().map { Int64($0) }
        }
    }

    /// A new int64 tensor.
    public static func int64(_ values: [Int64], shape: [Int]? = nil) -> Tensor {
        let t = Tensor(shape: Shape(shape ?? [values.count]), dtype: .int64)
        for (i, v) in values.enumerated() { t.pointer(as: Int64.self)[i] = v }
        return t
    }
}
