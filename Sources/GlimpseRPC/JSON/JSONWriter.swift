/// Serializes `JSONValue` to compact UTF-8 JSON. Object keys are written sorted, so output is stable.
extension JSONValue {
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    public var jsonString: String { String(decoding: serialized(), as: UTF8.self) }

    func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): JSONValue.writeInt(i, into: &out)
        case .double(let d): JSONValue.writeDouble(d, into: &out)
        case .string(let s): JSONValue.writeString(s, into: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                v.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            // The members sorted by key, values with them: no second hash lookup per key.
            for (i, member) in o.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A double as `JSONValue.double` writes it: an integral value below 10^15 as an integer, else
    /// its shortest round-trip form; null when it is not finite.
    static func writeDouble(_ d: Double, into out: inout [UInt8]) {
        guard d.isFinite else {
            out.append(contentsOf: "null".utf8)
            return
        }
        if d.rounded() == d && abs(d) < 1e15 {
            writeInt(Int(d), into: &out)
        } else if let k = thousandths(d) {
            writeThousandths(k, into: &out)
        } else {
            out.append(contentsOf: "\(d)".utf8)
        }
    }

    /// Decimal digits of `i`, written straight into `out` (no intermediate String).
    static func writeInt(_ i: Int, into out: inout [UInt8]) {
        if i < 0 { out.append(UInt8(ascii: "-")) }
        // The magnitude as UInt, so Int.min has one too.
        var m = i.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        withUnsafeMutableBytes(of: &digits) { d in
            repeat {
                d[n] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
                n += 1
            } while m > 0
            for k in stride(from: n - 1, through: 0, by: -1) { out.append(d[k]) }
        }
    }

    /// `d` as a whole number of thousandths (d = k / 1000 exactly as a Double, |k| < 10^12), or nil.
    /// Timings and energies are rounded to three decimals; their shortest round-trip form, which
    /// `description` prints, is then those decimals: two decimals of at most 15 significant digits
    /// cannot round to one Double.
    static func thousandths(_ d: Double) -> Int? {
        let k = (d * 1000).rounded()
        guard abs(k) < 1e12, k / 1000 == d else { return nil }
        return Int(k)
    }

    /// `k` thousandths in decimal, trailing zeros of the fraction dropped ("0.5", "12.345").
    static func writeThousandths(_ k: Int, into out: inout [UInt8]) {
        if k < 0 { out.append(UInt8(ascii: "-")) }
        let m = k.magnitude
        writeInt(Int(m / 1000), into: &out)
        var fraction = Int(m % 1000)
        guard fraction != 0 else { return }
        out.append(UInt8(ascii: "."))
        var digits = 3
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        var scale = digits == 3 ? 100 : digits == 2 ? 10 : 1
        while scale > 0 {
            out.append(UInt8(ascii: "0") + UInt8(fraction / scale % 10))
            scale /= 10
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings (labels, names, reasons) need no escaping: copy them whole, from their
        // contiguous UTF-8 (native strings are; others are made so once).
        var s = s
        let copied = s.withUTF8 { bytes -> Bool in
            for c in bytes where c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied {
            out.append(UInt8(ascii: "\""))
            return
        }
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""):
                out.append(0x5C)
                out.append(0x22)
            case UInt8(ascii: "\\"):
                out.append(0x5C)
                out.append(0x5C)
            case 0x0A:
                out.append(0x5C)
                out.append(UInt8(ascii: "n"))
            case 0x0D:
                out.append(0x5C)
                out.append(UInt8(ascii: "r"))
            case 0x09:
                out.append(0x5C)
                out.append(UInt8(ascii: "t"))
            case 0..<0x20:
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(c >> 4)], hex[Int(c & 15)]])
            default: out.append(c)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
