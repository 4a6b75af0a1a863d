import GlimpseTensor
import XCTest

final class NPYTests: XCTestCase {
    /// A .npy file, with its header padded to a multiple of 64 bytes as NumPy writes it.
    func npy(descr: String, shape: String, payload: [UInt8], fortran: Bool = false, version: UInt8 = 1) -> [UInt8] {
        var header = "{'descr': '\(descr)', 'fortran_order': \(fortran ? "True" : "False"), 'shape': \(shape), }"
        let prefix = version == 1 ? 10 : 12
        while (prefix + header.utf8.count + 1) % 64 != 0 { header += " " }
        header += "\n"
        let length = header.utf8.count
        var out: [UInt8] = [0x93] + Array("NUMPY".utf8) + [version, 0]
        out += version == 1 ? [UInt8(length & 0xFF), UInt8(length >> 8)]
                            : [UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), 0, 0]
        return out + Array(header.utf8) + payload
    }

    func bytes(_ values: [Float]) -> [UInt8] {
        values.flatMap { v in withUnsafeBytes(of: v.bitPattern.littleEndian) { Array($0) } }
    }

    func testDecodesFloat32Matrix() throws {
        let t = try NPY.decode(npy(descr: "<f4", shape: "(2, 3)", payload: bytes([1, 2, 3, 4, 5, 6])))
        XCTAssertEqual(t.dtype, .float32)
        XCTAssertEqual(t.shape, Shape([2, 3]))
        XCTAssertEqual(t.floats(), [1, 2, 3, 4, 5, 6])
    }

    func testDecodesVersion2HeaderAndOneDimension() throws {
        let t = try NPY.decode(npy(descr: "|u1", shape: "(4,)", payload: [1, 2, 250, 255], version: 2))
        XCTAssertEqual(t.dtype, .uint8)
        XCTAssertEqual(t.shape, Shape([4]))
        XCTAssertEqual(t.floats(), [1, 2, 250, 255])
    }

    func testRejectsWhatItCannotRead() {
        let cases: [(String, [UInt8])] = [
            ("bad magic", Array("not numpy at all".utf8)),
            ("Fortran order", npy(descr: "<f4", shape: "(1,)", payload: bytes([1]), fortran: true)),
            ("unsupported dtype", npy(descr: "<c8", shape: "(1,)", payload: [UInt8](repeating: 0, count: 8))),
            ("truncated data", npy(descr: "<f4", shape: "(4,)", payload: bytes([1, 2]))),
            ("truncated header", Array(npy(descr: "<f4", shape: "(1,)", payload: []).prefix(20))),
        ]
        for (name, data) in cases {
            XCTAssertThrowsError(try NPY.decode(data), name) { error in
                XCTAssertTrue(error is NPY.FormatError, name)
            }
        }
    }
}
