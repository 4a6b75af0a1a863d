/// base64 decoding of image payloads: the standard or URL-safe alphabet, padding optional, ASCII
/// whitespace anywhere, and an optional `data:…,` URL prefix.
///
/// Decodes straight into the result, four characters at a time through a lookup table, and falls
/// back to one character at a time only around whitespace and the final padding. A photo's payload
/// is hundreds of kilobytes, so this runs on every request; errors name the offending character and
/// its offset.
package enum Base64 {
    /// Table entries that are not 6-bit values.
    private static let whitespace: UInt8 = 0x40
    private static let invalid: UInt8 = 0x80

    /// The 6-bit value of every byte in either alphabet; `whitespace` or `invalid` for the rest.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: invalid, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() {
            table[Int(c)] = UInt8(i)
        }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        table[Int(UInt8(ascii: "_"))] = 63
        for c in [0x20, 0x09, 0x0A, 0x0D] { table[c] = whitespace }
        return table
    }()

    package static func decode(_ text: String, field: String) throws -> [UInt8] {
        var text = text
        return try text.withUTF8 { try decode(utf8: $0, field: field) }
    }

    /// The same, from the field's UTF-8 text.
    package static func decode(utf8: UnsafeBufferPointer<UInt8>, field: String) throws -> [UInt8] {
        var start = 0
        if utf8.starts(with: "data:".utf8), let comma = utf8.firstIndex(of: UInt8(ascii: ",")) {
            start = comma + 1
        }
        return try decode(UnsafeBufferPointer(rebasing: utf8[start...]), offset: start, field: field)
    }

    /// Decodes `input`, which starts `offset` bytes into the field's text (for error messages).
    private static func decode(_ input: UnsafeBufferPointer<UInt8>, offset: Int, field: String) throws -> [UInt8] {
        try values.withUnsafeBufferPointer { table in
            try [UInt8](unsafeUninitializedCapacity: input.count / 4 * 3 + 3) { out, written in
                var i = 0, o = 0
                let n = input.count
                var bits: UInt32 = 0, pending = 0
                scan: while i < n {
                    if pending == 0 {
                        while i + 4 <= n {
                            let a = table[Int(input[i])], b = table[Int(input[i + 1])]
                            let c = table[Int(input[i + 2])], d = table[Int(input[i + 3])]
                            if (a | b | c | d) >= 64 { break }
                            let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                            out[o] = UInt8(truncatingIfNeeded: v >> 16)
                            out[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                            out[o + 2] = UInt8(truncatingIfNeeded: v)
                            o += 3
                            i += 4
                        }
                        if i == n { break scan }
                    }
                    let byte = input[i], value = table[Int(byte)]
                    if value < 64 {
                        bits = bits << 6 | UInt32(value)
                        pending += 1
                        if pending == 4 {
                            out[o] = UInt8(truncatingIfNeeded: bits >> 16)
                            out[o + 1] = UInt8(truncatingIfNeeded: bits >> 8)
                            out[o + 2] = UInt8(truncatingIfNeeded: bits)
                            o += 3
                            bits = 0
                            pending = 0
                        }
                    } else if value != whitespace {
                        if byte == UInt8(ascii: "=") { break scan }
                        written = o
                        throw RPCError.invalidParams(
                            "\"\(field)\" is not valid base64: \(describe(byte)) at offset \(offset + i)", reason: "bad_base64")
                    }
                    i += 1
                }
                // Padding, if any, then only whitespace; it must complete the last group of four.
                var padding = 0
                while i < n {
                    let byte = input[i]
                    if byte == UInt8(ascii: "=") {
                        padding += 1
                    } else if table[Int(byte)] != whitespace {
                        written = o
                        throw RPCError.invalidParams(
                            "\"\(field)\" is not valid base64: \(describe(byte)) at offset \(offset + i), after the padding",
                            reason: "bad_base64")
                    }
                    i += 1
                }
                written = o
                if pending == 1 || (padding > 0 && pending + padding != 4) {
                    throw RPCError.invalidParams(
                        "\"\(field)\" is not valid base64: its length does not fit groups of four characters",
                        reason: "bad_base64")
                }
                if pending >= 2 {
                    let v = bits << (6 * UInt32(4 - pending))
                    out[o] = UInt8(truncatingIfNeeded: v >> 16)
                    if pending == 3 { out[o + 1] = UInt8(truncatingIfNeeded: v >> 8) }
                    o += pending - 1
                }
                written = o
                if o == 0 { throw RPCError.invalidParams("\"\(field)\" is empty", reason: "bad_base64") }
            }
        }
    }

    private static func describe(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? "character '\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }
}
