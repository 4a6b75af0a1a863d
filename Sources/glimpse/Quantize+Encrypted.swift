import ArgumentParser
import Foundation
import GlimpseImage
import GlimpseONNX
import GlimpseQuantize
import GlimpseServing
import GlimpseTensor

extension Quantize {
    /// An encrypted model: decrypted in memory, quantized, checked in the engine, and written
    /// encrypted with the key it came with (`<stem>-<mode>.onnx.enc` by default). The comparison
    /// table, which reads both models by path, is not made for encrypted models.
    func runEncrypted(mode: QuantizationMode, spec: Preprocessing) throws {
        let keyring = try keys.keyring()
        guard let data = FileManager.default.contents(atPath: model) else { throw ValidationError("cannot read \(model)") }
        let keyID = try EncryptedModelFile.header([UInt8](data)).keyID
        let plain = try EncryptedModelFile.open(path: model, keyring: keyring)
        let stem = String(EncryptedModelFile.boundName(forPath: model).dropLast(".onnx".count))
        let output = out ?? "\(stem)-\(mode.fileSuffix).onnx\(EncryptedModelFile.fileExtension)"
        guard EncryptedModelFile.isEncrypted(output) else {
            throw ValidationError("the variant of an encrypted model is written encrypted: --out must end in .onnx.enc")
        }
        guard let initialization = KMeansInitialization(rawValue: kmeansInit) else {
            throw ValidationError("--kmeans-init must be linear, quantile or mixed")
        }
        let bytes: [UInt8]
        if mode == .int8Static {
            guard let images else { throw ValidationError("int8-static needs calibration images: --images DIR (or an IDX file or tar archive)") }
            let method = try CalibrationMethod(name: calibration, percentile: percentile)
            let (inputs, _, _) = try calibrationInputs(images, spec: spec) {
                try StaticQuantizer.calibrationInputs(folder: images, model: try ONNXLoader.load(bytes: plain, name: stem),
                                                      preprocessing: spec, limit: calibrationImages)
            }
            guard !inputs.isEmpty else { throw ValidationError("no usable calibration images in \(images)") }
            bytes = try StaticQuantizer.quantize(plain, name: stem, calibration: inputs, method: method,
                                                 concatSharesOutput: concatSharedScale, threads: threads).model.bytes
        } else {
            bytes = try ModelQuantizer.quantize(plain, name: stem, mode: mode,
                                                options: QuantizationOptions(kmeansInitialization: initialization,
                                                                             kmeansChannelScales: kmeansChannelScales)).bytes
        }
        do {
            _ = try ONNXLoader.load(bytes: bytes, name: "\(stem) (\(mode.name))")
        } catch {
            throw QuantizationError(.verificationFailed, "the \(mode.name) variant of \(stem) does not load in the engine: \(error)")
        }
        let sealed = try EncryptedModelFile.seal(bytes, name: EncryptedModelFile.boundName(forPath: output), keyID: keyID, keyring: keyring)
        try Data(sealed).write(to: URL(fileURLWithPath: output), options: .atomic)
        print("wrote \(output): \(bytes.count) bytes as \(mode), encrypted with key \(keyID) (\(sealed.count) bytes)")
        if images != nil && mode != .int8Static { print("note: the comparison table is not made for encrypted models") }
    }
}
