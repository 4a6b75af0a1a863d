import Foundation

/// Reads labelled images out of a tar archive (ustar, GNU long names, pax `path`), gzip allowed.
/// A member `any/dirs/<label>/<file>.jpg` is labelled by its folder; a member at the top level by
/// its file name (`<label>_*.jpg` or `<label>-*.jpg`).
public enum TarReader {
    public struct Member: Sendable {
        public var path: String
        public var bytes: [UInt8]
    }

    static func isTar(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 512 else { return false }
        if Array(bytes[257..<262]) == Array("ustar".utf8) { return true }
        return headerChecksumMatches(bytes, at: 0)
    }

    /// The regular files of an archive, in archive order.
    public static func members(_ raw: [UInt8], name: String) throws -> [Member] {
        let bytes = Gzip.isCompressed(raw) ? try Gzip.decompress(raw) : raw
        var members: [Member] = []
        var offset = 0
        var longName: String?
        while offset + 512 <= bytes.count {
            if bytes[offset..<(offset + 512)].allSatisfy({ $0 == 0 }) { break }   // end of archive
            guard headerChecksumMatches(bytes, at: offset) else {
                throw DatasetError("\(name): bad tar header checksum at byte \(offset)")
            }
            let size = try field(bytes, offset + 124, 12, name: name)
            let type = bytes[offset + 156]
            let dataStart = offset + 512
            guard size >= 0, dataStart + size <= bytes.count else {
                throw DatasetError("\(name): tar member at byte \(offset) runs past the end of the archive")
            }
            let data = bytes[dataStart..<(dataStart + size)]
            var path = string(bytes, offset, 100)
            let prefix = Array(bytes[(offset + 257)..<(offset + 262)]) == Array("ustar".utf8) ? string(bytes, offset + 345, 155) : ""
            if !prefix.isEmpty { path = prefix + "/" + path }
            switch type {
            case UInt8(ascii: "L"):   // GNU: the next member's long name
                longName = String(decoding: data.prefix { $0 != 0 }, as: UTF8.self)
            case UInt8(ascii: "x"):   // pax extended header
                if let p = paxPath(data) { longName = p }
            case UInt8(ascii: "0"), 0:
                members.append(Member(path: longName ?? path, bytes: Array(data)))
                longName = nil
            default:
                longName = nil
            }
            offset = dataStart + (size + 511) / 512 * 512
        }
        return members
    }

    /// The labelled images of an archive, up to `limit`.
    public static func read(_ path: String, limit: Int? = nil) throws -> [EvalSample] {
        guard let data = FileManager.default.contents(atPath: path) else { throw DatasetError("cannot read \(path)") }
        return try samples(members([UInt8](data), name: path), limit: limit)
    }

    static func samples(_ members: [Member], limit: Int?) -> [EvalSample] {
        var out: [EvalSample] = []
        for m in members where ImageFiles.isImage(m.path) {
            if let limit, out.count >= limit { break }
            let parts = m.path.split(separator: "/").filter { $0 != "." }
            let label = parts.count >= 2 ? String(parts[parts.count - 2]) : ImageFiles.labelFromFileName(m.path)
            guard let label, !label.isEmpty else { continue }
            out.append(EvalSample(label: label, image: .encoded(m.bytes), source: m.path))
        }
        return out
    }

    static func headerChecksumMatches(_ b: [UInt8], at o: Int) -> Bool {
        guard let stored = try? field(b, o + 148, 8, name: "") else { return false }
        var sum = 0
        for i in 0..<512 { sum += (148..<156).contains(i) ? 32 : Int(b[o + i]) }
        return sum == stored
    }

    /// An octal number field (or GNU base-256 when the high bit is set).
    static func field(_ b: [UInt8], _ o: Int, _ n: Int, name: String) throws -> Int {
        if b[o] & 0x80 != 0 {
            var v = 0
            for i in 1..<n {
                guard v < (1 << 55) else { throw DatasetError("\(name): tar size field too large") }
                v = v << 8 | Int(b[o + i])
            }
            return v
        }
        var v = 0
        var seen = false
        for i in 0..<n {
            let c = b[o + i]
            if c == 0 || c == 32 { if seen { break } else { continue } }
            guard (48...55).contains(c), v < (1 << 58) else { throw DatasetError("\(name): bad octal field in tar header") }
            v = v * 8 + Int(c - 48)
            seen = true
        }
        return v
    }

    static func string(_ b: [UInt8], _ o: Int, _ n: Int) -> String {
        String(decoding: b[o..<(o + n)].prefix { $0 != 0 }, as: UTF8.self)
    }

    /// `path=` from pax records (`<len> key=value\n`).
    static func paxPath(_ data: ArraySlice<UInt8>) -> String? {
        let text = String(decoding: data, as: UTF8.self)
        for record in text.split(separator: "\n") {
            guard let space = record.firstIndex(of: " ") else { continue }
            let kv = record[record.index(after: space)...]
            if kv.hasPrefix("path=") { return String(kv.dropFirst(5)) }
        }
        return nil
    }
}
