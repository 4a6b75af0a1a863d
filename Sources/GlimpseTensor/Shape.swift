/// A tensor shape: a list of non-negative dimensions, outermost first (NCHW for images).
public struct Shape: Hashable, Sendable, CustomStringConvertible, ExpressibleByArrayLiteral {
    public var dims: [Int]

    @inlinable
    public init(_ dims: [Int]) { self.dims = dims }

    @inlinable
    public init(arrayLiteral elements: Int...) { self.dims = elements }

    /// Number of dimensions.
    @inlinable
    public var rank: Int { dims.count }

    /// Number of elements (1 for a scalar).
    @inlinable
    public var count: Int { dims.reduce(1, *) }

    @inlinable
    public subscript(_ i: Int) -> Int {
        get { dims[i] }
        set { dims[i] = newValue }
    }

    /// Row-major strides in elements.
    @inlinable
    public var strides: [Int] {
        var s = [Int](repeating: 1, count: dims.count)
        var acc = 1
        for i in stride(from: dims.count - 1, through: 0, by: -1) {
            s[i] = acc
            acc *= dims[i]
        }
        return s
    }

    public var description: String { "[" + dims.map(String.init).joined(separator: ",") + "]" }
}
