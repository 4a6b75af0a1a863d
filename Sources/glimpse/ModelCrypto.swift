import ArgumentParser
import Foundation
import GlimpseServing

/// Keys for encrypted model files (`*.onnx.enc`), for the commands that load models.
struct ModelKeyOptions: ParsableArguments {
    static let environmentVariable = "GLIMPSE_MODEL_KEY_FILE"

    @Option(name: .customLong("model-key-file"),
            help: "Key file for encrypted models (*.onnx.enc); repeat for several keys (rotation). Default: $GLIMPSE_MODEL_KEY_FILE (paths separated by ':').")
    var modelKeyFile: [String] = []

    /// The keys of `--model-key-file`, else of the files `GLIMPSE_MODEL_KEY_FILE` names; empty when neither is set.
    func keyring() throws -> ModelKeyring {
        var files = modelKeyFile
        if files.isEmpty, let env = ProcessInfo.processInfo.environment[Self.environmentVariable] {
            files = env.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        }
        do {
            return try ModelKeyring.load(files: files)
        } catch let error as KeyFileError {
            throw ValidationError(error.description)
        }
    }
}

extension Models {
    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new random AES-256 key for encrypted models (`ID BASE64`, mode 0600).")
        @Option(help: "Key file to create (never overwritten).") var out: String
        @Option(help: "Key id stored in the file and in each file it encrypts (default: the key's fingerprint).") var id: String?

        func run() throws {
            guard !FileManager.default.fileExists(atPath: out) else { throw ValidationError("\(out) exists; not overwritten") }
            let (keyID, line) = try ModelKeyring.generateKeyLine(id: id)
            guard FileManager.default.createFile(atPath: out, contents: Data(line.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw ValidationError("cannot write \(out)")
            }
            print("wrote key \(keyID) to \(out)")
        }
    }

    struct Encrypt: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Encrypt an ONNX model (AES-256-GCM) into IN.onnx.enc, which serve and the other commands load with its key.")
        @Argument(help: "The .onnx file.") var input: String
        @Option(help: "Key file (see `glimpse models keygen`).") var keyFile: String
        @Option(help: "Which key of the key file (default: its first).") var keyID: String?
        @Option(help: "Output file; must end in .onnx.enc (default: the input with .enc added).") var out: String?

        func run() throws {
            let target = out ?? input + EncryptedModelFile.fileExtension
            guard EncryptedModelFile.isEncrypted(target) else { throw ValidationError("the output name must end in .onnx.enc: \(target)") }
            guard let data = FileManager.default.contents(atPath: input) else { throw ValidationError("cannot read \(input)") }
            let keyring = try ModelKeyOptions.load(keyFile)
            guard let id = keyID ?? keyring.ids.first else { throw ValidationError("\(keyFile) holds no key") }
            let sealed = try EncryptedModelFile.seal([UInt8](data), name: EncryptedModelFile.boundName(forPath: target),
                                                     keyID: id, keyring: keyring)
            try Data(sealed).write(to: URL(fileURLWithPath: target), options: .atomic)
            print("wrote \(target) (key \(id), \(sealed.count) bytes)")
        }
    }

    struct Decrypt: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decrypt an encrypted model back to plain ONNX (serving never needs this: it decrypts in memory).")
        @Argument(help: "The .onnx.enc file.") var input: String
        @Option(help: "Key file; it may hold several keys, the file's key id picks one.") var keyFile: String
        @Option(help: "Output file (default: the input without .enc).") var out: String?

        func run() throws {
            guard out != nil || input.hasSuffix(EncryptedModelFile.fileExtension) else {
                throw ValidationError("give --out: the input does not end in .enc")
            }
            let target = out ?? String(input.dropLast(EncryptedModelFile.fileExtension.count))
            let plain = try EncryptedModelFile.open(path: input, keyring: try ModelKeyOptions.load(keyFile))
            try Data(plain).write(to: URL(fileURLWithPath: target), options: .atomic)
            print("wrote \(target) (\(plain.count) bytes)")
        }
    }
}

extension ModelKeyOptions {
    static func load(_ keyFile: String) throws -> ModelKeyring {
        do {
            return try ModelKeyring.load(files: [keyFile])
        } catch let error as KeyFileError {
            throw ValidationError(error.description)
        }
    }
}
