import Foundation
import GlimpseImage
import GlimpseServing

/// Writes a trained model where Glimpse finds it: `<stem>.onnx`, `<stem>.labels.txt` and the
/// sidecar `<stem>.json` (family, variant, version, labels, the base's preprocessing, accuracy on
/// the validation images) in one folder, so `models.load` of `<stem>` serves it.
public enum TrainedModelFiles {
    /// Returns the paths written.
    @discardableResult
    /// With `sealWith` (a key id of `keyring`), the model is written encrypted, as `<stem>.onnx.enc`
    /// (see `EncryptedModelFile`), and no plaintext copy touches the disk; `glimpse train` does so
    /// when its base model is encrypted.
    public static func write(_ outcome: HeadTrainer.Outcome, to path: String, family: String, preprocessing p: Preprocessing,
                             accuracyDataset: String?, sealWith keyID: String? = nil, keyring: ModelKeyring = ModelKeyring()) throws -> [String] {
        guard path.hasSuffix(".onnx") else { throw DatasetError("--out must name a .onnx file: \(path)") }
        let folder = (path as NSString).deletingLastPathComponent
        let stem = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        let directory = folder.isEmpty ? "." : folder
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let labelsName = stem + ".labels.txt"
        let labelsPath = (directory as NSString).appendingPathComponent(labelsName)
        let sidecarPath = (directory as NSString).appendingPathComponent(stem + ".json")
        var preprocessing: [String: Any] = [
            "width": p.width, "height": p.height, "crop": p.crop.rawValue, "channel_order": p.channelOrder.rawValue,
            "layout": p.layout.rawValue, "scale": Double(p.scale), "mean": p.mean.map(Double.init), "std": p.std.map(Double.init),
            "invert": p.invert, "dtype": p.dtype.rawValue,
        ]
        if let short = p.resizeShortSide { preprocessing["resize_short_side"] = short }
        let modelFile = stem + ".onnx" + (keyID == nil ? "" : EncryptedModelFile.fileExtension)
        let modelPath = (directory as NSString).appendingPathComponent(modelFile)
        var sidecar: [String: Any] = [
            "file": modelFile, "family": family, "variant": stem, "version": "1", "labels": labelsName,
            "preprocessing": preprocessing,
        ]
        if let accuracy = outcome.report?.accuracy {
            sidecar["accuracy"] = (accuracy * 10_000).rounded() / 10_000
            sidecar["accuracy_dataset"] = accuracyDataset ?? "validation images held out by glimpse train (\(outcome.validationImages))"
        }
        let json = try JSONSerialization.data(withJSONObject: sidecar, options: [.prettyPrinted, .sortedKeys])
        let bytes = try keyID.map { try EncryptedModelFile.seal(outcome.model, name: stem + ".onnx", keyID: $0, keyring: keyring) } ?? outcome.model
        try Data(bytes).write(to: URL(fileURLWithPath: modelPath))
        try Data((outcome.labels.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: labelsPath))
        try json.write(to: URL(fileURLWithPath: sidecarPath))
        return [modelPath, labelsPath, sidecarPath]
    }
}

/// The base model of `glimpse train`: its ONNX bytes (decrypted in memory for `*.onnx.enc`) and metadata.
public enum BaseModel {
    /// The bytes, the metadata and, for an encrypted file, the id of the key it was sealed with.
    public static func read(named name: String, directory: String, keyring: ModelKeyring) throws -> (bytes: [UInt8], metadata: ModelMetadata, keyID: String?) {
        let (found, _) = ModelDirectory.scan(directory)
        guard let metadata = found.first(where: { $0.name == name }) else {
            throw DatasetError("no model \"\(name)\" in \(directory); available: \(found.map(\.name).sorted().joined(separator: ", "))")
        }
        let path = (directory as NSString).appendingPathComponent(metadata.file)
        guard let data = FileManager.default.contents(atPath: path) else { throw DatasetError("cannot read model file \(path)") }
        if EncryptedModelFile.isEncrypted(path) {
            let keyID = try? EncryptedModelFile.header([UInt8](data)).keyID
            return (try EncryptedModelFile.open(path: path, keyring: keyring), metadata, keyID)
        }
        return ([UInt8](data), metadata, nil)
    }

    /// The first `limit` samples of each label, in data set order.
    public static func firstPerLabel(_ samples: [EvalSample], limit: Int) -> [EvalSample] {
        var counts: [String: Int] = [:]
        return samples.filter { s in
            counts[s.label, default: 0] += 1
            return counts[s.label, default: 0] <= limit
        }
    }
}
