import Foundation
import GlimpseImage
import GlimpseTestSupport
import XCTest

@testable import GlimpseModelTools
import GlimpseServing

/// `ModelPuller` against a local HTTP server (`RangeHTTPServer`) serving the shared models: verified
/// downloads, corrupted bytes, interrupted downloads resumed with `Range`, redirects, statuses and
/// timeouts. Everything runs on 127.0.0.1; nothing is fetched from the network.
final class ModelPullTests: XCTestCase {
    var server: RangeHTTPServer!
    /// Where models are pulled to: not there until the puller (or a test) makes it.
    var folder: String!
    var mnist: [UInt8]!

    override func setUpWithError() throws {
        mnist = try SharedData.bytes("models/mnist-8.onnx")
        server = try RangeHTTPServer()
        server.serve("/mnist-8.onnx", bytes: mnist)
        folder = try temporaryFolder("pull").appending("models").path
    }

    override func tearDownWithError() throws {
        server.stop()
    }

    func entry(_ name: String) throws -> ModelCatalog.Entry {
        try XCTUnwrap(try ModelCatalog.builtIn.entries[name], "catalog has no \(name)")
    }

    func puller(force: Bool = false, timeout: TimeInterval = 10) -> ModelPuller {
        ModelPuller(directory: folder, urlBase: server.baseURL, force: force, downloader: HTTPDownloader(idleTimeout: timeout))
    }

    func path(_ name: String) -> String { (folder as NSString).appendingPathComponent(name) }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path(name)) }

    final class Events: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [ModelPuller.Event] = []
        func add(_ e: ModelPuller.Event) { lock.lock(); list.append(e); lock.unlock() }
        var all: [ModelPuller.Event] { lock.lock(); defer { lock.unlock() }; return list }
    }

    func testSHA256() throws {
        XCTAssertEqual(SHA256.hex([UInt8]()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256.hex(Array("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // Fed in uneven pieces, across block boundaries.
        var h = SHA256()
        var offset = 0
        for step in [1, 63, 64, 65, 127, 1000, 5000] where offset < mnist.count {
            let end = min(mnist.count, offset + step)
            h.update(mnist[offset..<end])
            offset = end
        }
        h.update(mnist[offset...])
        XCTAssertEqual(h.finalizeHex(), "2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf")
    }

    func testCatalogFileMatchesBuiltIn() throws {
        let file = try ModelCatalog(contentsOf: SharedData.repoRoot.appendingPathComponent("models/catalog.json").path)
        let builtIn = try ModelCatalog.builtIn
        XCTAssertEqual(file.names, builtIn.names)
        for name in ["squeezenet1.1", "mobilenetv2", "resnet50"] { XCTAssertNotNil(file.entries[name], name) }
        for name in file.names {
            let a = file.entries[name]!, b = builtIn.entries[name]!
            XCTAssertEqual(a.model, b.model, name)
            XCTAssertEqual(a.files, b.files, name)
            XCTAssertEqual(a.sidecar, b.sidecar, name)
            XCTAssertEqual(a.model.url.host, "github.com", name)
        }
        // The checksums the catalog marks as verified agree with the shared copies of the same files.
        XCTAssertEqual(try SHA256.hex(ofFile: SharedData.path("models/mnist-8.onnx")), file.entries["mnist-8"]!.model.sha256)
        XCTAssertEqual(try SHA256.hex(ofFile: SharedData.path("models/shufflenet-v2-qdq.onnx")), file.entries["shufflenet-v2-qdq"]!.model.sha256)
        XCTAssertEqual(try SHA256.hex(ofFile: SharedData.path("labels/imagenet_classes.txt")), file.entries["resnet50"]!.files[0].sha256)
    }

    func testPullVerifiesWritesSidecarAndTheModelLoads() async throws {
        let events = Events()
        let result = try puller().pull(try entry("mnist-8")) { events.add($0) }
        XCTAssertEqual(result.downloaded, ["mnist-8.onnx"])
        XCTAssertEqual(try SHA256.hex(ofFile: path("mnist-8.onnx")), "2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf")
        XCTAssertFalse(exists("mnist-8.onnx.part"))
        let sidecar = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path("mnist-8.json")))) as? [String: Any]
        XCTAssertEqual(sidecar?["preprocessing"] as? String, "mnist")
        XCTAssertEqual(sidecar?["sha256"] as? String, "2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf",
                       "the sidecar carries the checksum every later load verifies")
        XCTAssertTrue(events.all.contains { if case .verified("mnist-8.onnx", _, false) = $0 { return true }; return false })
        XCTAssertEqual(server.requests.map(\.path), ["/mnist-8.onnx"])
        XCTAssertNil(server.requests[0].range)

        let service = InferenceService(configuration: .init(engineThreads: 1))
        defer { service.shutdown() }
        let model = try service.registry.load(named: "mnist-8", directory: folder)
        XCTAssertEqual(model.labels.count, 10)
        let digit = try SharedData.bytes("images/digits/torchserve_3.png")
        let r = try await service.classify(ClassifyRequest(images: [digit], model: "mnist-8", topK: 1))
        XCTAssertEqual(r[0].predictions.first?.label, "3")

        // A second pull finds the verified file and fetches nothing.
        try puller().pull(try entry("mnist-8"))
        XCTAssertEqual(server.requests.count, 1)
        // --force fetches again.
        try puller(force: true).pull(try entry("mnist-8"))
        XCTAssertEqual(server.requests.count, 2)
    }

    func testPullFetchesLabelsForImagenetModels() throws {
        server.serve("/shufflenet-v2-12-qdq.onnx", bytes: try SharedData.bytes("models/shufflenet-v2-qdq.onnx"))
        server.serve("/imagenet_classes.txt", bytes: try SharedData.bytes("labels/imagenet_classes.txt"))
        let result = try puller().pull(try entry("shufflenet-v2-qdq"))
        XCTAssertEqual(result.downloaded, ["imagenet_classes.txt", "shufflenet-v2-qdq.onnx"])
        let (found, issues) = ModelDirectory.scan(folder)
        XCTAssertEqual(found.map(\.name), ["shufflenet-v2-qdq"], "\(issues)")
        XCTAssertEqual(found.first?.labelsFile, "imagenet_classes.txt")
        let service = InferenceService(configuration: .init(engineThreads: 1))
        defer { service.shutdown() }
        let model = try service.registry.load(named: "shufflenet-v2-qdq", directory: folder)
        XCTAssertEqual(model.labels.count, 1000)
        XCTAssertEqual(model.labels[0], "tench")
    }

    func testCorruptedDownloadIsDeletedAndTheErrorNamesBothHashes() throws {
        server.behaviour = .corrupt
        var corrupted = mnist!
        corrupted[corrupted.count / 2] ^= 0xFF
        let actual = SHA256.hex(corrupted)
        XCTAssertThrowsError(try puller().pull(try entry("mnist-8"))) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("checksum mismatch"), text)
            XCTAssertTrue(text.contains("2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf"), text)
            XCTAssertTrue(text.contains(actual), text)
        }
        XCTAssertFalse(exists("mnist-8.onnx"))
        XCTAssertFalse(exists("mnist-8.onnx.part"))
        XCTAssertFalse(exists("mnist-8.json"))
    }

    /// A full disk while the download is written: the `.part` is a link to /dev/full, where every write
    /// fails with ENOSPC. The error says so, and the partial file is removed, not kept for a resume.
    func testFullDiskRemovesThePartialFileAndSaysWhy() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: path("mnist-8.onnx.part"), withDestinationPath: "/dev/full")
        XCTAssertThrowsError(try puller().pull(try entry("mnist-8"))) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("No space left on device") && text.contains("was removed"), text)
        }
        XCTAssertNil(try? FileManager.default.destinationOfSymbolicLink(atPath: path("mnist-8.onnx.part")), "the partial file is still there")
        XCTAssertFalse(exists("mnist-8.onnx"))
        XCTAssertFalse(exists("mnist-8.json"))
        // With space again, the pull starts over and succeeds.
        try puller().pull(try entry("mnist-8"))
        XCTAssertEqual(try SHA256.hex(ofFile: path("mnist-8.onnx")), "2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf")
    }

    func testInterruptedDownloadResumesWithRange() throws {
        server.behaviour = .cutAfter(10_000)
        XCTAssertThrowsError(try puller().pull(try entry("mnist-8"))) { error in
            XCTAssertTrue("\(error)".contains("resume"), "\(error)")
        }
        XCTAssertFalse(exists("mnist-8.onnx"))
        let partSize = try FileManager.default.attributesOfItem(atPath: path("mnist-8.onnx.part"))[.size] as? Int
        XCTAssertEqual(partSize, 10_000)

        server.behaviour = .normal
        let events = Events()
        try puller().pull(try entry("mnist-8")) { events.add($0) }
        XCTAssertEqual(server.requests.last?.range, "bytes=10000-")
        XCTAssertTrue(events.all.contains { if case .start(_, _, 10_000, _) = $0 { return true }; return false })
        XCTAssertTrue(events.all.contains { if case .verified(_, _, true) = $0 { return true }; return false })
        XCTAssertEqual(try SHA256.hex(ofFile: path("mnist-8.onnx")), "2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf")
        XCTAssertFalse(exists("mnist-8.onnx.part"))
    }

    func testResumeFollowsRedirectsWithTheRange() throws {
        server.serve("/lfs/mnist-8.onnx", bytes: mnist)
        server.redirect("/mnist-8.onnx", to: "\(server.baseURL.absoluteString)/lfs/mnist-8.onnx")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: path("mnist-8.onnx.part"), contents: Data(mnist[0..<4096]))
        try puller().pull(try entry("mnist-8"))
        XCTAssertEqual(server.requests.map(\.path), ["/mnist-8.onnx", "/lfs/mnist-8.onnx"])
        XCTAssertEqual(server.requests.last?.range, "bytes=4096-")
        XCTAssertEqual(try SHA256.hex(ofFile: path("mnist-8.onnx")), "2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf")
    }

    func testA200AnswerToARangeRequestRestartsFromZero() throws {
        server.behaviour = .ignoreRange
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: path("mnist-8.onnx.part"), contents: Data(repeating: 7, count: 5000))
        try puller().pull(try entry("mnist-8"))
        XCTAssertEqual(server.requests.last?.range, "bytes=5000-")
        XCTAssertEqual(try SHA256.hex(ofFile: path("mnist-8.onnx")), "2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf")
    }

    func testHTTPErrorStatusIsReported() throws {
        let puller = ModelPuller(directory: folder, urlBase: server.baseURL.appendingPathComponent("missing"),
                                 downloader: HTTPDownloader(idleTimeout: 10))
        XCTAssertThrowsError(try puller.pull(try entry("mnist-8"))) { error in
            XCTAssertTrue("\(error)".contains("HTTP 404"), "\(error)")
        }
        XCTAssertFalse(exists("mnist-8.onnx"))
        XCTAssertFalse(exists("mnist-8.onnx.part"), "an empty part is not kept")
    }

    func testStalledServerTimesOut() throws {
        server.behaviour = .stall(seconds: 6)
        let start = Date()
        XCTAssertThrowsError(try puller(timeout: 1).pull(try entry("mnist-8"))) { error in
            XCTAssertTrue("\(error)".contains("failed"), "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5.5)
    }

    func testUnreachableServerFailsClearly() throws {
        let puller = ModelPuller(directory: folder, urlBase: URL(string: "http://127.0.0.1:1")!, downloader: HTTPDownloader(idleTimeout: 5))
        XCTAssertThrowsError(try puller.pull(try entry("mnist-8"))) { error in
            XCTAssertTrue(error is PullError, "\(error)")
        }
    }
}
