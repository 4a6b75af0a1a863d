import Foundation
import GlimpseTestSupport
import XCTest

@testable import GlimpseModelTools
import GlimpseServing

/// The evaluation data set readers: MNIST IDX files (gzip), tar archives written by GNU tar
/// (ustar and long names), the shared CIFAR-10 tar, and labelled folders in both layouts.
final class EvalDatasetTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try temporaryFolder("evaldata").url
    }

    func write(_ relative: String, _ bytes: [UInt8] = Array("not really an image".utf8)) throws {
        let url = dir.appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
    }

    /// tar of a few small files takes well under a second; the limit is for a slow, loaded machine.
    func run(_ tool: String, _ args: [String], in cwd: URL) throws {
        let result = try ChildProcess.run(tool, args, timeLimit: 120, currentDirectory: cwd)
        XCTAssertEqual(result.status, 0, "\(tool) \(args): \(result.log)")
    }

    func testIDXReaderReadsTheMNISTTestSet() throws {
        let images = try SharedData.path("datasets/mnist/t10k-images-idx3-ubyte.gz")
        XCTAssertEqual(IDXReader.labelsPath(forImages: images), try SharedData.path("datasets/mnist/t10k-labels-idx1-ubyte.gz"))
        let (kind, samples) = try EvalDataset.load(images, limit: 500)
        XCTAssertEqual(kind, .idx)
        XCTAssertEqual(samples.count, 500)
        XCTAssertEqual(samples.prefix(10).map(\.label), ["7", "2", "1", "0", "4", "1", "4", "9", "5", "9"])
        guard case let .pixels(pixels, w, h, c) = samples[0].image else { return XCTFail("expected raw pixels") }
        XCTAssertEqual([w, h, c, pixels.count], [28, 28, 1, 784])
        XCTAssertEqual(pixels.max(), 255)
        XCTAssertEqual(pixels[0], 0)
        let all = try EvalDataset.load(images).samples
        XCTAssertEqual(all.count, 10_000)
        XCTAssertEqual(Set(all.map(\.label)).count, 10)
    }

    func testTruncatedOrMismatchedIDXFailsClearly() throws {
        let labels = try SharedData.bytes("datasets/mnist/t10k-labels-idx1-ubyte.gz")
        try write("cut-labels-idx1-ubyte.gz", Array(labels.prefix(labels.count / 2)))
        XCTAssertThrowsError(try IDXReader.parse(try IDXReader.readFile(dir.appendingPathComponent("cut-labels-idx1-ubyte.gz").path), name: "cut")) { error in
            XCTAssertTrue("\(error)".contains("gzip"), "\(error)")
        }
        // 3 images of 2×2, but 2 labels.
        try write("x-images-idx3-ubyte", [0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2] + Array(repeating: 9, count: 12))
        try write("x-labels-idx1-ubyte", [0, 0, 8, 1, 0, 0, 0, 2, 1, 2])
        XCTAssertThrowsError(try EvalDataset.load(dir.appendingPathComponent("x-images-idx3-ubyte").path)) { error in
            XCTAssertTrue("\(error)".contains("3 images"), "\(error)")
        }
        // Header larger than the data.
        try write("y-images-idx3-ubyte", [0, 0, 8, 3, 0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2])
        XCTAssertThrowsError(try IDXReader.parse(try IDXReader.readFile(dir.appendingPathComponent("y-images-idx3-ubyte").path), name: "y"))
    }

    func testTarReaderLabelsByFolderAndFileName() throws {
        let long = String(repeating: "nested-folder-with-a-long-name/", count: 4)
        try write("src/test/cat/0001.jpg", Array("cat one".utf8))
        try write("src/test/cat/0002.png", Array("cat two".utf8))
        try write("src/test/dog/0001.jpg", Array("dog".utf8))
        try write("src/\(long)horse/0001.jpeg", Array("horse".utf8))
        try write("src/bird_03.png", Array("bird".utf8))
        try write("src/README.txt")
        try write("src/noseparator.png")
        let src = dir.appendingPathComponent("src")
        for format in ["ustar", "gnu", "pax"] {
            try run("/usr/bin/tar", ["--format=\(format)", "-cf", "../\(format).tar", "test", "bird_03.png", "README.txt", "noseparator.png", "nested-folder-with-a-long-name"], in: src)
            let (kind, samples) = try EvalDataset.load(dir.appendingPathComponent("\(format).tar").path)
            XCTAssertEqual(kind, .tar, format)
            let byLabel = Dictionary(grouping: samples, by: \.label).mapValues(\.count)
            XCTAssertEqual(byLabel, ["cat": 2, "dog": 1, "horse": 1, "bird": 1], format)
            let cat = samples.first { $0.source.hasSuffix("cat/0002.png") }
            guard case .encoded(let bytes)? = cat?.image else { return XCTFail("no cat/0002.png in \(format)") }
            XCTAssertEqual(bytes, Array("cat two".utf8), format)
        }
        try run("/usr/bin/tar", ["-czf", "../gz.tar.gz", "test"], in: src)
        let gz = try EvalDataset.load(dir.appendingPathComponent("gz.tar.gz").path, limit: 2).samples
        XCTAssertEqual(gz.count, 2)
        XCTAssertTrue(gz.allSatisfy { ["cat", "dog"].contains($0.label) })
    }

    func testTarReaderRejectsADamagedArchive() throws {
        try write("src/a/1.jpg")
        try run("/usr/bin/tar", ["-cf", "../ok.tar", "a"], in: dir.appendingPathComponent("src"))
        var bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent("ok.tar")))
        bytes[130] ^= 0x01   // inside the first header's size field
        XCTAssertThrowsError(try TarReader.members(bytes, name: "damaged")) { XCTAssertTrue("\($0)".contains("checksum"), "\($0)") }
        XCTAssertThrowsError(try TarReader.members(Array(bytes.prefix(600)), name: "short"))
    }

    func testCIFARTestTar() throws {
        let tar = try SharedData.path("datasets/cifar10-jpeg/test.tar")
        let (kind, samples) = try EvalDataset.load(tar)
        XCTAssertEqual(kind, .tar)
        XCTAssertEqual(samples.count, 10_000)
        let byLabel = Dictionary(grouping: samples, by: \.label).mapValues(\.count)
        XCTAssertEqual(byLabel.keys.sorted(), ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"])
        XCTAssertTrue(byLabel.values.allSatisfy { $0 == 1000 })
        guard case .encoded(let jpeg) = samples[0].image else { return XCTFail() }
        XCTAssertEqual(Array(jpeg.prefix(2)), [0xFF, 0xD8])
    }

    func testLabelledFolders() throws {
        try write("byfolder/cat/a.jpg")
        try write("byfolder/cat/deeper/b.png")
        try write("byfolder/dog/c.JPG")
        try write("byfolder/dog/notes.txt")
        try write("byfolder/.hidden/d.jpg")
        let (kind, samples) = try EvalDataset.load(dir.appendingPathComponent("byfolder").path)
        XCTAssertEqual(kind, .folder)
        XCTAssertEqual(samples.map(\.label), ["cat", "cat", "dog"])

        try write("loose/3_first.png")
        try write("loose/3-second.jpg")
        try write("loose/tabby_cat.jpeg")
        try write("loose/nolabel.png")
        try write("loose/7_x.txt")
        let loose = try EvalDataset.load(dir.appendingPathComponent("loose").path).samples
        XCTAssertEqual(loose.map(\.label).sorted(), ["3", "3", "tabby"])
        XCTAssertEqual(try EvalDataset.load(dir.appendingPathComponent("loose").path, limit: 1).samples.count, 1)
    }

    func testUnknownInputsFailClearly() throws {
        XCTAssertThrowsError(try EvalDataset.load(dir.appendingPathComponent("missing").path))
        try write("plain.bin", Array(repeating: 1, count: 2000))
        XCTAssertThrowsError(try EvalDataset.load(dir.appendingPathComponent("plain.bin").path)) {
            XCTAssertTrue("\($0)".contains("neither"), "\($0)")
        }
    }
}
