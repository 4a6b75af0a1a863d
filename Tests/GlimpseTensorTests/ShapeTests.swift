import GlimpseTensor
import XCTest

final class ShapeTests: XCTestCase {
    func testCountRankAndStrides() {
        let s: Shape = [2, 3, 4, 5]
        XCTAssertEqual(s.rank, 4)
        XCTAssertEqual(s.count, 120)
        XCTAssertEqual(s.strides, [60, 20, 5, 1])
        XCTAssertEqual(s.description, "[2,3,4,5]")
    }

    func testScalarAndEmptyShapes() {
        let scalar = Shape([])
        XCTAssertEqual(scalar.rank, 0)
        XCTAssertEqual(scalar.count, 1, "a scalar holds one element")
        XCTAssertEqual(scalar.strides, [])
        let empty: Shape = [4, 0, 3]
        XCTAssertEqual(empty.count, 0)
        XCTAssertEqual(empty.strides, [0, 3, 1])
    }

    func testSubscriptWritesOneDimension() {
        var s: Shape = [1, 3, 224, 224]
        s[0] = 8
        XCTAssertEqual(s, Shape([8, 3, 224, 224]))
        XCTAssertEqual(s[0], 8)
    }

    func testDTypeSizes() {
        let sizes: [DType: Int] = [.float32: 4, .float16: 2, .int8: 1, .uint8: 1, .int32: 4, .int64: 8, .bool: 1]
        for dtype in DType.allCases { XCTAssertEqual(dtype.byteSize, sizes[dtype], "\(dtype)") }
        XCTAssertEqual(DType(rawValue: "float16"), .float16)
    }
}

final class SplitMix64Tests: XCTestCase {
    func testReferenceSequenceAndRange() {
        var g = SplitMix64(seed: 0)
        XCTAssertEqual(g.next(), 0xE220_A839_7B1D_CDAF, "the published first output for seed 0")
        var a = SplitMix64(seed: 42), b = SplitMix64(seed: 42)
        for _ in 0..<100 {
            let f = a.nextFloat()
            XCTAssertTrue(f >= 0 && f < 1)
            XCTAssertEqual(f, b.nextFloat(), "same seed, same values")
        }
    }
}
