/// NumPy-style broadcasting of two shapes, and an iteration plan over the result.
public enum Broadcast {
    public static func shape(_ a: [Int], _ b: [Int]) throws -> [Int] {
        let rank = max(a.count, b.count)
        let pa = [Int](repeating: 1, count: rank - a.count) + a
        let pb = [Int](repeating: 1, count: rank - b.count) + b
        return try zip(pa, pb).map { x, y in
            if x == y || y == 1 { return x }
            if x == 1 { return y }
            throw EngineError("shapes \(a) and \(b) cannot be broadcast")
        }
    }

    /// Output dims merged where possible, with the element strides of each operand (0 = broadcast).
    public struct Plan {
        var dims: [Int] = []
        var strideA: [Int] = []
        var strideB: [Int] = []

        public init(out: [Int], a: [Int], b: [Int]) {
            let rank = out.count
            func strides(_ s: [Int]) -> [Int] {
                let p = [Int](repeating: 1, count: rank - s.count) + s
                var st = [Int](repeating: 0, count: rank)
                var acc = 1
                for d in stride(from: rank - 1, through: 0, by: -1) {
                    st[d] = p[d] == 1 ? 0 : acc
                    acc *= p[d]
                }
                return st
            }
            let sa = strides(a), sb = strides(b)
            // Merge dimension d into the previous one when both operands stay contiguous or broadcast.
            for d in 0..<rank where out[d] != 1 {
                if let last = dims.indices.last,
                   strideA[last] == sa[d] * out[d], strideB[last] == sb[d] * out[d] {
                    dims[last] *= out[d]
                    strideA[last] = sa[d]
                    strideB[last] = sb[d]
                } else {
                    dims.append(out[d])
                    strideA.append(sa[d])
                    strideB.append(sb[d])
                }
            }
            if dims.isEmpty {
                dims = [1]
                strideA = [0]
                strideB = [0]
            }
        }

        /// Calls `body(outOffset, aOffset, aStep, bOffset, bStep, count)` for each innermost row.
        public func forEachRow(_ body: (Int, Int, Int, Int, Int, Int) -> Void) {
            let r = dims.count
            let n = dims[r - 1], sa = strideA[r - 1], sb = strideB[r - 1]
            var index = [Int](repeating: 0, count: r)
            var o = 0, ia = 0, ib = 0
            while true {
                body(o, ia, sa, ib, sb, n)
                o += n
                var d = r - 2
                while d >= 0 {
                    index[d] += 1
                    ia += strideA[d]
                    ib += strideB[d]
                    if index[d] < dims[d] { break }
                    ia -= strideA[d] * dims[d]
                    ib -= strideB[d] * dims[d]
                    index[d] = 0
                    d -= 1
                }
                if d < 0 { return }
            }
        }

        /// Innermost rows of the output (each `dims.last` elements long).
        public var rowCount: Int { dims.dropLast().reduce(1, *) }
        public var rowLength: Int { dims[dims.count - 1] }

        /// `forEachRow` over rows `rows` only, each row's offsets computed from its index (so
        /// threads can split the rows; no allocation).
        public func forEachRow(_ rows: Range<Int>, _ body: (Int, Int, Int, Int, Int, Int) -> Void) {
            let r = dims.count
            let n = dims[r - 1], sa = strideA[r - 1], sb = strideB[r - 1]
            for row in rows {
                var rest = row, ia = 0, ib = 0
                var d = r - 2
                while d >= 0 {
                    let i = rest % dims[d]
                    rest /= dims[d]
                    ia += i * strideA[d]
                    ib += i * strideB[d]
                    d -= 1
                }
                body(row * n, ia, sa, ib, sb, n)
            }
        }

        /// Calls `body(outIndex, aIndex, bIndex)` per element.
        public func forEach(_ body: (Int, Int, Int) -> Void) {
            forEachRow { o, ia, sa, ib, sb, n in
                for i in 0..<n { body(o + i, ia + i * sa, ib + i * sb) }
            }
        }
    }
}
