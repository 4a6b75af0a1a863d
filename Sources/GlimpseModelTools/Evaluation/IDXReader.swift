import Foundation

/// MNIST's IDX format: big-endian magic `00 00 08 NDIMS` (unsigned bytes), NDIMS sizes, then the data.
/// An image file (`*-images-idx3-ubyte`) pairs with a label file (`*-labels-idx1-ubyte`).
public enum IDXReader {
    public struct Parsed: Sendable {
        public var dims: [Int]
        public var data: [UInt8]
        public var headerBytes: Int
    }

    static func isIDX(_ bytes: [UInt8]) -> Bool { bytes.count >= 4 && bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 0x08 && (1...4).contains(bytes[3]) }

    /// Parses an IDX file of unsigned bytes (gzip allowed).
    public static func parse(_ raw: [UInt8], name: String) throws -> Parsed {
        let bytes = Gzip.isCompressed(raw) ? try Gzip.decompress(raw) : raw
        guard bytes.count >= 4, bytes[0] == 0, bytes[1] == 0 else { throw DatasetError("\(name) is not an IDX file") }
        guard bytes[2] == 0x08 else { throw DatasetError("\(name): IDX element type 0x\(String(bytes[2], radix: 16)) is not unsigned bytes (0x08)") }
        let ndims = Int(bytes[3])
        guard (1...4).contains(ndims), bytes.count >= 4 + 4 * ndims else { throw DatasetError("\(name): bad IDX header") }
        var dims: [Int] = []
        for d in 0..<ndims {
            let o = 4 + 4 * d
            dims.append(Int(bytes[o]) << 24 | Int(bytes[o + 1]) << 16 | Int(bytes[o + 2]) << 8 | Int(bytes[o + 3]))
        }
        let header = 4 + 4 * ndims
        let (count, overflow) = dims.reduce((1, false)) { acc, d in
            let (v, o) = acc.0.multipliedReportingOverflow(by: d)
            return (v, acc.1 || o)
        }
        guard !overflow, bytes.count - header >= count else {
            throw DatasetError("\(name): IDX header says \(dims) but the file holds \(bytes.count - header) data bytes")
        }
        return Parsed(dims: dims, data: bytes, headerBytes: header)
    }

    /// Reads an image file and its label file: up to `limit` samples, labels as decimal strings.
    public static func read(images imagesPath: String, labels labelsPath: String, limit: Int? = nil) throws -> [EvalSample] {
        let images = try parse(try readFile(imagesPath), name: imagesPath)
        let labels = try parse(try readFile(labelsPath), name: labelsPath)
        guard images.dims.count == 3 || (images.dims.count == 4 && [1, 3].contains(images.dims[3])) else {
            throw DatasetError("\(imagesPath): IDX images must be N×rows×cols (or N×rows×cols×channels), got \(images.dims)")
        }
        guard labels.dims.count == 1 else { throw DatasetError("\(labelsPath): IDX labels must be one-dimensional, got \(labels.dims)") }
        guard labels.dims[0] == images.dims[0] else {
            throw DatasetError("\(imagesPath) holds \(images.dims[0]) images but \(labelsPath) holds \(labels.dims[0]) labels")
        }
        let (h, w) = (images.dims[1], images.dims[2])
        let channels = images.dims.count == 4 ? images.dims[3] : 1
        let size = h * w * channels
        let n = min(images.dims[0], limit ?? .max)
        return (0..<n).map { i in
            let start = images.headerBytes + i * size
            return EvalSample(label: String(labels.data[labels.headerBytes + i]),
                              image: .pixels(Array(images.data[start..<(start + size)]), width: w, height: h, channels: channels),
                              source: "\((imagesPath as NSString).lastPathComponent)[\(i)]")
        }
    }

    /// The label file beside an image file: `…images-idx3-ubyte…` → `…labels-idx1-ubyte…`.
    public static func labelsPath(forImages path: String) -> String? {
        let dir = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        guard name.contains("images-idx3") else { return nil }
        let base = name.replacingOccurrences(of: "images-idx3", with: "labels-idx1")
        let stripped = base.hasSuffix(".gz") ? String(base.dropLast(3)) : base
        for candidate in [base, stripped, stripped + ".gz"] {
            let p = (dir as NSString).appendingPathComponent(candidate)
            if FileManager.default.fileExists(atPath: p) { return p }
        }
        return nil
    }

    static func readFile(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw DatasetError("cannot read \(path)") }
        return [UInt8](data)
    }
}
