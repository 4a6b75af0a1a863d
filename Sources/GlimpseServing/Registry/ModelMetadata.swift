import Foundation
import GlimpseImage
import GlimpseTensor

/// Sidecar metadata for one model file: `<stem>.json` beside `<stem>.onnx`.
///
/// ```json
/// { "preprocessing": "imagenet",            // a preset name, or an object (see `Preprocessing`)
///   "labels": "imagenet_classes.txt",       // path relative to the model folder
///   "family": "squeezenet1.1", "variant": "fp32", "version": "1",
///   "accuracy": 0.581, "accuracy_dataset": "ImageNet val (top-1)",
///   "sha256": "…" }                         // optional: a load refuses a file that differs
/// ```
/// `accuracy` (0…1) ranks the variants of a family for dynamic selection; without it a variant ranks
/// below every variant that has one.
/// A folder may instead hold a `models.json` manifest: `{"models": {"<name>": {"file": …, "preprocessing": …}}}`.
public struct ModelMetadata: Sendable, Hashable {
    public var name: String
    public var file: String
    public var preprocessing: Preprocessing
    public var labelsFile: String?
    public var family: String
    public var variant: String
    public var version: String
    /// Measured top-1 accuracy (0…1) and the data set it was measured on.
    public var accuracy: Double?
    public var accuracyDataset: String?
    /// SHA-256 of the model file, lowercase hex, when the metadata gives one: loads verify it.
    public var sha256: String?

    public init(name: String, file: String, preprocessing: Preprocessing, labelsFile: String? = nil,
                family: String? = nil, variant: String? = nil, version: String = "1",
                accuracy: Double? = nil, accuracyDataset: String? = nil) {
        self.accuracy = accuracy
        self.accuracyDataset = accuracyDataset
        self.name = name
        self.file = file
        self.preprocessing = preprocessing
        self.labelsFile = labelsFile
        self.family = family ?? name
        self.variant = variant ?? name
        self.version = version
    }
}

/// Named preprocessing presets, so a manifest can say `"preprocessing": "imagenet"`.
public enum PreprocessingPreset {
    public static let imagenetMean: [Float] = [0.485, 0.456, 0.406]
    public static let imagenetStd: [Float] = [0.229, 0.224, 0.225]

    public static func named(_ name: String) -> Preprocessing? {
        switch name {
        case "imagenet", "torch":
            return Preprocessing(width: 224, height: 224, resizeShortSide: 256, crop: .center, channelOrder: .rgb,
                                 scale: 1.0 / 255.0, mean: imagenetMean, std: imagenetStd)
        case "caffe_bgr", "caffe_bgr_fp16":
            return Preprocessing(width: 224, height: 224, resizeShortSide: 256, crop: .center, channelOrder: .bgr,
                                 scale: 1, mean: [103.94, 116.78, 123.68], std: [1, 1, 1],
                                 dtype: name.hasSuffix("fp16") ? .float16 : .float32)
        case "mnist":
            return Preprocessing(width: 28, height: 28, resizeShortSide: nil, crop: .fill, channelOrder: .gray,
                                 scale: 1, mean: [0], std: [1])
        default:
            return nil
        }
    }

    public static var names: [String] { ["imagenet", "torch", "caffe_bgr", "caffe_bgr_fp16", "mnist"] }
}
