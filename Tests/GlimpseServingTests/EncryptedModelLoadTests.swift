import Foundation
@testable import GlimpseServing
import GlimpseTestSupport
import XCTest

/// Encrypted models load like plain ones, in memory only, and a bad new version never replaces a good one.
final class EncryptedModelLoadTests: XCTestCase {
    func testRoundTripGivesThePlainModelsOutputs() async throws {
        let fixture = try EncryptedModelFixture(self)
        try fixture.writePlain(as: "plain")
        try fixture.writeEncrypted(as: "sealed", keyID: "old")
        let service = fixture.service()
        defer { service.shutdown() }
        let problems = service.registry.loadDirectory(fixture.path)
        XCTAssertEqual(problems, [])
        XCTAssertEqual(service.registry.all.map(\.name), ["plain", "sealed"])
        let plain = try await EncryptedModelFixture.scores(service, model: "plain")
        let sealed = try await EncryptedModelFixture.scores(service, model: "sealed")
        XCTAssertEqual(plain.count, 10)
        XCTAssertEqual(plain, sealed)

        // Decrypting by hand gives the original bytes back.
        let bytes = try EncryptedModelFile.open(path: fixture.folder.appending("sealed.onnx.enc").path, keyring: fixture.keyring)
        XCTAssertEqual(bytes, fixture.plaintext)
    }

    /// A models.json entry may name an encrypted file.
    func testManifestEntryNamesAnEncryptedFile() async throws {
        let fixture = try EncryptedModelFixture(self)
        let sealed = try EncryptedModelFile.seal(fixture.plaintext, name: "digits-v2.onnx", keyID: "new", keyring: fixture.keyring)
        try Data(sealed).write(to: fixture.folder.appending("digits-v2.onnx.enc"))
        let manifest = #"{"models": {"digits": {"file": "digits-v2.onnx.enc", "preprocessing": "mnist"}}}"#
        try Data(manifest.utf8).write(to: fixture.folder.appending("models.json"))
        let service = fixture.service()
        defer { service.shutdown() }
        XCTAssertEqual(service.registry.loadDirectory(fixture.path), [])
        XCTAssertEqual(service.registry.all.map(\.name), ["digits"])
        let scores = try await EncryptedModelFixture.scores(service, model: "digits")
        XCTAssertEqual(scores.count, 10)
    }

    /// No new or changed file under the model folder or the temporary directory holds the plaintext.
    func testLoadingWritesNoPlaintext() throws {
        let fixture = try EncryptedModelFixture(self)
        try fixture.writeEncrypted(as: "sealed")
        let roots = [fixture.path, FileManager.default.temporaryDirectory.path]
        let before = Self.snapshot(roots)
        let service = fixture.service()
        defer { service.shutdown() }
        XCTAssertEqual(service.registry.loadDirectory(fixture.path), [])
        XCTAssertNotNil(service.registry.model(named: "sealed"))
        let after = Self.snapshot(roots)
        // This test's plaintext only: its end, which holds the unique marker, and the marker alone.
        let samples = [Array(fixture.plaintext.suffix(80)), fixture.marker]
        for (path, stamp) in after where before[path] != stamp {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            for sample in samples {
                XCTAssertNil(data.range(of: Data(sample)), "\(path) holds plaintext of the model")
            }
        }
        XCTAssertEqual(Set(after.keys.filter { $0.hasPrefix(fixture.path) }),
                       Set(before.keys.filter { $0.hasPrefix(fixture.path) }), "the load added files to the model folder")
    }

    /// Regular files under `roots` with their size and modification time.
    static func snapshot(_ roots: [String]) -> [String: String] {
        var out: [String: String] = [:]
        let fm = FileManager.default
        for root in roots {
            guard let walker = fm.enumerator(atPath: root) else { continue }
            while let relative = walker.nextObject() as? String {
                let path = (root as NSString).appendingPathComponent(relative)
                guard let attributes = walker.fileAttributes, attributes[.type] as? FileAttributeType == .typeRegular else { continue }
                let size = (attributes[.size] as? Int) ?? -1
                let stamp = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
                guard size <= 256 << 20 else { continue }
                out[path] = "\(size) \(stamp)"
            }
        }
        return out
    }

    /// A reload (`models.reload`'s path) of a tampered file fails naming the file, and the loaded
    /// version keeps serving; a good new version then replaces it.
    func testReloadOfATamperedFileKeepsTheOldVersionServing() async throws {
        let fixture = try EncryptedModelFixture(self)
        let sealed = try fixture.writeEncrypted(as: "digits", version: "1")
        let service = fixture.service()
        defer { service.shutdown() }
        let first = try await service.load(named: "digits", directory: fixture.path)
        XCTAssertEqual(first.metadata.version, "1")
        let before = try await EncryptedModelFixture.scores(service, model: "digits")

        var tampered = sealed
        tampered[tampered.count / 3] ^= 0x20
        try Data(tampered).write(to: fixture.folder.appending("digits.onnx.enc"))
        try fixture.writeSidecar("digits", version: "2")
        do {
            _ = try await service.load(named: "digits", directory: fixture.path)
            XCTFail("a tampered file loaded")
        } catch let error as ServingError {
            guard case .modelUnavailable(let message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("digits.onnx.enc") && message.contains("authentication failed"), message)
        }
        XCTAssertEqual(service.registry.model(named: "digits")?.metadata.version, "1")
        let still = try await EncryptedModelFixture.scores(service, model: "digits")
        XCTAssertEqual(still, before)

        // Truncated, then under an unknown key: refused the same way (the model is unavailable, naming
        // the file). One byte short still has a whole header, so the shortened tag fails authentication;
        // a key id the service's keyring lacks is named as such before any decryption.
        try Data(sealed.prefix(sealed.count - 1)).write(to: fixture.folder.appending("digits.onnx.enc"))
        await assertModelUnavailable(try await service.load(named: "digits", directory: fixture.path),
                                     naming: ["digits.onnx.enc", "authentication failed"])
        var other = ModelKeyring()
        try other.add(id: "elsewhere", key: [UInt8](repeating: 5, count: 32))
        try fixture.writeEncrypted(as: "digits", keyID: "elsewhere", keyring: other, version: "2")
        await assertModelUnavailable(try await service.load(named: "digits", directory: fixture.path),
                                     naming: ["digits.onnx.enc", "no key with id \"elsewhere\""])
        XCTAssertEqual(service.registry.model(named: "digits")?.metadata.version, "1")

        try fixture.writeEncrypted(as: "digits", keyID: "old", version: "2")
        let second = try await service.load(named: "digits", directory: fixture.path)
        XCTAssertEqual(second.metadata.version, "2")
        XCTAssertEqual(service.registry.model(named: "digits")?.metadata.version, "2")
    }
}

func XCTAssertThrowsErrorAsync<T>(_ body: @autoclosure () async throws -> T, file: StaticString = #filePath, line: UInt = #line) async {
    do {
        _ = try await body()
        XCTFail("no error thrown", file: file, line: line)
    } catch {}
}

/// `body` fails with `ServingError.modelUnavailable` whose message contains every fragment of `naming`.
func assertModelUnavailable<T>(_ body: @autoclosure () async throws -> T, naming fragments: [String],
                               file: StaticString = #filePath, line: UInt = #line) async {
    do {
        _ = try await body()
        XCTFail("no error thrown", file: file, line: line)
    } catch let error as ServingError {
        guard case .modelUnavailable(let message) = error else {
            return XCTFail("expected modelUnavailable, got \(error)", file: file, line: line)
        }
        for fragment in fragments {
            XCTAssertTrue(message.contains(fragment), "\"\(message)\" does not contain \"\(fragment)\"", file: file, line: line)
        }
    } catch {
        XCTFail("expected ServingError.modelUnavailable, got \(type(of: error)): \(error)", file: file, line: line)
    }
}
