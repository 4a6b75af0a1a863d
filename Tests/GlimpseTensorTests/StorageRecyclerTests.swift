@testable import GlimpseTensor
import XCTest

final class StorageRecyclerTests: XCTestCase {
    /// A size no other test allocates, so parallel tests do not take these buffers.
    let size = (1 << 20) + 4096 + 128 + 3

    func testLargeUnzeroedStorageIsReusedWithItsPaddingZeroed() {
        var first: TensorStorage? = TensorStorage(byteCount: size, zeroed: false)
        let address = first?.bytes
        first?.bytes.initializeMemory(as: UInt8.self, repeating: 0xAB, count: TensorStorage.padded(size))
        first = nil
        let second = TensorStorage(byteCount: size, zeroed: false)
        XCTAssertEqual(second.bytes, address, "the released buffer serves the next storage of its size")
        let padding = UnsafeRawBufferPointer(start: second.bytes + size, count: TensorStorage.padded(size) - size)
        XCTAssertTrue(padding.allSatisfy { $0 == 0 }, "the padding past the elements is zero again")
        XCTAssertNil(first)
    }

    func testZeroedAndSmallStorageIsNotKept() {
        let before = StorageRecycler.keptBytes
        var zeroed: TensorStorage? = TensorStorage(byteCount: size + 64, zeroed: true)
        zeroed = nil
        var small: TensorStorage? = TensorStorage(byteCount: StorageRecycler.minimumBytes - 64, zeroed: false)
        small = nil
        XCTAssertNil(zeroed)
        XCTAssertNil(small)
        XCTAssertEqual(StorageRecycler.keptBytes, before)
        let fresh = TensorStorage(byteCount: size + 64, zeroed: true)
        let raw = UnsafeRawBufferPointer(start: fresh.bytes, count: TensorStorage.padded(size + 64))
        XCTAssertTrue(raw.allSatisfy { $0 == 0 })
    }

    func testWhatIsKeptIsBounded() {
        let big = StorageRecycler.capacityBytes / 3 + 64
        var storages: [TensorStorage] = (0..<4).map { _ in TensorStorage(byteCount: big, zeroed: false) }
        storages.removeAll()
        XCTAssertLessThanOrEqual(StorageRecycler.keptBytes, StorageRecycler.capacityBytes)
        // Drain what this test left, so other tests see the shelf as they found it.
        var taken = 0
        while let buffer = StorageRecycler.take(TensorStorage.padded(big)) {
            buffer.deallocate()
            taken += 1
        }
        XCTAssertTrue((1...2).contains(taken), "\(taken) of four buffers of a third of the capacity were kept")
    }
}
