import GlimpseTensor
import XCTest

final class TensorTests: XCTestCase {
    func testStorageIsAlignedZeroedAndPadded() {
        for bytes in [0, 1, 63, 64, 65, 1000] {
            let storage = TensorStorage(byteCount: bytes)
            XCTAssertEqual(Int(bitPattern: storage.bytes) % TensorStorage.alignment, 0, "\(bytes) bytes")
            XCTAssertEqual(storage.byteCount, bytes)
            // A whole 64-byte line past the last element is readable and zero.
            let padded = max(64, (bytes + 63) / 64 * 64)
            let raw = UnsafeRawBufferPointer(start: storage.bytes, count: padded)
            XCTAssertTrue(raw.allSatisfy { $0 == 0 }, "\(bytes) bytes")
        }
    }

    func testFloatsRoundTrip() {
        let values: [Float] = [0, 1, -2.5, 3.25, .greatestFiniteMagnitude, -0.0]
        let t = Tensor(shape: [2, 3], floats: values)
        XCTAssertEqual(t.count, 6)
        XCTAssertEqual(t.byteCount, 24)
        XCTAssertEqual(t.floats(), values)
        XCTAssertEqual(t.description, "Tensor(float32[2,3])")
    }

    func testFloatsConvertEveryDType() {
        let h = Tensor(shape: [3], dtype: .float16)
        let halves: [Float16] = [1.5, -2, 0.25]
        for (i, v) in halves.enumerated() { h.pointer(as: UInt16.self)[i] = v.bitPattern }
        XCTAssertEqual(h.floats(), [1.5, -2, 0.25])

        let i8 = Tensor(shape: [2], dtype: .int8)
        i8.pointer(as: Int8.self)[0] = -128
        i8.pointer(as: Int8.self)[1] = 127
        XCTAssertEqual(i8.floats(), [-128, 127])

        let u8 = Tensor(shape: [2], dtype: .uint8)
        u8.pointer(as: UInt8.self)[1] = 255
        XCTAssertEqual(u8.floats(), [0, 255])

        let i32 = Tensor(shape: [1], dtype: .int32)
        i32.pointer(as: Int32.self)[0] = -7
        XCTAssertEqual(i32.floats(), [-7])

        let i64 = Tensor(shape: [1], dtype: .int64)
        i64.pointer(as: Int64.self)[0] = 1 << 40
        XCTAssertEqual(i64.floats(), [Float(1 << 40)])
    }

    func testItemIsAViewOfOneBatchEntry() {
        let batch = Tensor(shape: [3, 2, 2], floats: (0..<12).map(Float.init))
        let second = batch.item(1)
        XCTAssertEqual(second.shape, Shape([2, 2]))
        XCTAssertEqual(second.byteOffset, 16)
        XCTAssertEqual(second.floats(), [4, 5, 6, 7])
        // The view shares memory with the batch.
        second.pointer(as: Float.self)[0] = 40
        XCTAssertEqual(batch.floats()[4], 40)
        XCTAssertTrue(second.storage === batch.storage)
    }
}
