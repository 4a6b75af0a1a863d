/// Reader for NumPy's `.npy` format (version 1–3, little-endian, C order): the format reference
/// tensors are stored in.
public enum NPY {
    public struct FormatError: Error, CustomStringConvertible {
        public let description: String
    }

    public static func decode(_ data: [UInt8]) throws -> Tensor {
        guard data.count >= 10, data[0] == 0x93, Array(data[1...5]) == Array("NUMPY".utf8) else {
            throw FormatError(description: "not an .npy file (bad magic)")
        }
        let major = data[6]
        let headerLength: Int
        let headerStart: Int
        if major == 1 {
            headerLength = Int(data[8]) | Int(data[9]) << 8
            headerStart = 10
        } else {
            guard data.count >= 12 else { throw FormatError(description: "truncated .npy header") }
            headerLength = Int(data[8]) | Int(data[9]) << 8 | Int(data[10]) << 16 | Int(data[11]) << 24
            headerStart = 12
        }
        guard headerStart + headerLength <= data.count else { throw FormatError(description: "truncated .npy header") }
        let header = String(decoding: data[headerStart..<(headerStart + headerLength)], as: UTF8.self)
        guard !header.contains("'fortran_order': True") else { throw FormatError(description: "Fortran order is not supported") }
        let dtype: DType
        if header.contains("'<f4'") { dtype = .float32 }
        else if header.contains("'<f2'") { dtype = .float16 }
        else if header.contains("'|u1'") { dtype = .uint8 }
        else if header.contains("'|i1'") { dtype = .int8 }
        else if header.contains("'<i4'") { dtype = .int32 }
        else if header.contains("'<i8'") { dtype = .int64 }
        else { throw FormatError(description: "unsupported .npy dtype in header \(header)") }
        guard let open = header.firstIndex(of: "("), let close = header[open...].firstIndex(of: ")") else {
            throw FormatError(description: "no shape in .npy header")
        }
        let dims = header[header.index(after: open)..<close]
            .split(separator: ",")
            .compactMap { Int($0.trimmingCharacters(in: " ")) }
        let shape = Shape(dims)
        let start = headerStart + headerLength
        guard data.count - start >= shape.count * dtype.byteSize else { throw FormatError(description: "truncated .npy data") }
        let tensor = Tensor(shape: shape, dtype: dtype)
        data.withUnsafeBytes { raw in
            if let base = raw.baseAddress {
                tensor.rawPointer.copyMemory(from: base + start, byteCount: tensor.byteCount)
            }
        }
        return tensor
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> Substring {
        var s = self
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return s
    }
}
