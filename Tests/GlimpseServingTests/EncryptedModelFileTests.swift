import Foundation
@testable import GlimpseServing
import GlimpseTestSupport
import XCTest

/// Encrypted model files refused for every reason they should be, each with the file and the reason.
final class EncryptedModelFileTests: XCTestCase {
    func testWrongKeyIsRefused() throws {
        let fixture = try EncryptedModelFixture(self)
        try fixture.writeEncrypted(as: "digits", keyID: "new")
        var wrong = ModelKeyring()
        try wrong.add(id: "new", key: [UInt8](repeating: 9, count: 32))
        let service = fixture.service(keys: wrong)
        defer { service.shutdown() }
        let message = loadError { _ = try service.registry.load(named: "digits", directory: fixture.path) }
        XCTAssertTrue(message.contains("digits.onnx.enc"), message)
        XCTAssertTrue(message.contains("authentication failed"), message)
        XCTAssertNil(service.registry.model(named: "digits"))
    }

    /// One flipped byte anywhere (magic, version, key id length, key id, nonce, ciphertext, tag).
    func testAFlippedByteAnywhereIsRefused() throws {
        let fixture = try EncryptedModelFixture(self)
        let sealed = try fixture.writeEncrypted(as: "digits", keyID: "new")
        let header = try EncryptedModelFile.header(sealed)
        XCTAssertEqual(header.keyID, "new")
        XCTAssertEqual(header.length, 10 + 3 + 12)
        let positions = [0, 7, 8, 9, 10, 12, 13, 13 + 11, header.length, header.length + 1000, sealed.count / 2,
                         sealed.count - 17, sealed.count - 16, sealed.count - 1]
        let service = fixture.service()
        defer { service.shutdown() }
        let url = fixture.folder.appending("digits.onnx.enc")
        for position in positions {
            for mask: UInt8 in [0x01, 0x80] {
                var bytes = sealed
                bytes[position] ^= mask
                try Data(bytes).write(to: url)
                let message = loadError { _ = try service.registry.load(named: "digits", directory: fixture.path) }
                XCTAssertTrue(message.contains("digits.onnx.enc"), "byte \(position): \(message)")
                XCTAssertNil(service.registry.model(named: "digits"), "byte \(position) ^ \(mask) loaded")
            }
        }
        // The untouched file loads.
        try Data(sealed).write(to: url)
        XCTAssertNoThrow(try service.registry.load(named: "digits", directory: fixture.path))
    }

    func testATruncatedFileIsRefused() throws {
        let fixture = try EncryptedModelFixture(self)
        let sealed = try fixture.writeEncrypted(as: "digits")
        let service = fixture.service()
        defer { service.shutdown() }
        for length in [0, 5, 9, 20, 40, sealed.count / 2, sealed.count - 16, sealed.count - 1] {
            try Data(sealed.prefix(length)).write(to: fixture.folder.appending("digits.onnx.enc"))
            let message = loadError { _ = try service.registry.load(named: "digits", directory: fixture.path) }
            XCTAssertTrue(message.contains("digits.onnx.enc"), "\(length) bytes: \(message)")
            XCTAssertTrue(message.contains("truncated") || message.contains("authentication failed") || message.contains("empty"),
                          "\(length) bytes: \(message)")
        }
    }

    /// A file renamed (or another model's file put in its place) fails: the name is authenticated.
    func testARenamedFileIsRefused() throws {
        let fixture = try EncryptedModelFixture(self)
        let sealed = try fixture.writeEncrypted(as: "digits")
        try Data(sealed).write(to: fixture.folder.appending("other.onnx.enc"))
        try fixture.writeSidecar("other", version: "1")
        let service = fixture.service()
        defer { service.shutdown() }
        let message = loadError { _ = try service.registry.load(named: "other", directory: fixture.path) }
        XCTAssertTrue(message.contains("other.onnx.enc") && message.contains("authentication failed"), message)
        XCTAssertNoThrow(try service.registry.load(named: "digits", directory: fixture.path))
    }

    /// Two keys by id: files under either load; an unknown id is named; no keys at all says so.
    func testKeyRotation() throws {
        let fixture = try EncryptedModelFixture(self)
        try fixture.writeEncrypted(as: "under-old", keyID: "old")
        try fixture.writeEncrypted(as: "under-new", keyID: "new")
        var retired = ModelKeyring()
        try retired.add(id: "retired-2024", key: [UInt8](repeating: 3, count: 32))
        try fixture.writeEncrypted(as: "under-retired", keyID: "retired-2024", keyring: retired)
        let service = fixture.service()
        defer { service.shutdown() }
        let problems = service.registry.loadDirectory(fixture.path)
        XCTAssertEqual(service.registry.all.map(\.name), ["under-new", "under-old"])
        XCTAssertEqual(problems.count, 1, "\(problems)")
        XCTAssertTrue(problems.first?.contains("under-retired.onnx.enc") ?? false, "\(problems)")
        XCTAssertTrue(problems.first?.contains("\"retired-2024\"") ?? false, "\(problems)")

        let keyless = fixture.service(keys: ModelKeyring())
        defer { keyless.shutdown() }
        let message = loadError { _ = try keyless.registry.load(named: "under-old", directory: fixture.path) }
        XCTAssertTrue(message.contains("under-old.onnx.enc") && message.contains("no model key was given"), message)
    }

    /// Key files: `ID KEY` lines in hex or base64, bare keys (fingerprint ids), comments, raw bytes.
    func testKeyFiles() throws {
        let folder = try temporaryFolder("model-keys")
        let key = (0..<32).map { UInt8($0 * 7 & 0xff) }
        let hex = key.map { String(format: "%02x", $0) }.joined()
        let text = "# rotation\nold \(hex)\n\nnew \(Data(key.reversed()).base64EncodedString())\n\(hex.uppercased())\n"
        try Data(text.utf8).write(to: folder.appending("keys.txt"))
        try Data(key.reversed()).write(to: folder.appending("raw.key"))
        let keyring = try ModelKeyring.load(files: [folder.appending("keys.txt").path, folder.appending("raw.key").path])
        XCTAssertEqual(keyring.ids, ["old", "new", ModelKeyring.fingerprint(key), ModelKeyring.fingerprint(key.reversed())])
        XCTAssertEqual(keyring.key(id: "old"), key)
        XCTAssertEqual(keyring.key(id: "new"), key.reversed())
        XCTAssertEqual(ModelKeyring.fingerprint(key).count, 16)

        let generated = try ModelKeyring.generateKeyLine(id: "prod-1")
        try Data(generated.line.utf8).write(to: folder.appending("gen.key"))
        XCTAssertEqual(try ModelKeyring.load(files: [folder.appending("gen.key").path]).ids, ["prod-1"])

        for bad in ["old 1234\n", "a b c\n", "bad/id \(hex)\n"] {
            try Data(bad.utf8).write(to: folder.appending("bad.key"))
            XCTAssertThrowsError(try ModelKeyring.load(files: [folder.appending("bad.key").path]), bad)
        }
        try Data("k \(hex)\nk \(String(hex.reversed()))\n".utf8).write(to: folder.appending("dup.key"))
        XCTAssertThrowsError(try ModelKeyring.load(files: [folder.appending("dup.key").path]))
    }
}
