import GlimpseTensor

/// How an image is fitted to the model input (Core ML's crop-and-scale options).
public enum CropMode: String, Sendable, Codable, CaseIterable {
    /// Resize the short side, then crop the center.
    case center
    /// Scale to fit inside the input, pad the rest.
    case fit
    /// Stretch to the input size, ignoring the aspect ratio.
    case fill
}

public enum ChannelOrder: String, Sendable, Codable {
    case rgb, bgr, gray
}

public enum TensorLayout: String, Sendable, Codable {
    case nchw, nhwc
}

/// Per-model preprocessing, read from the model's metadata.
/// Pixel value written = ((raw 0–255 [inverted if `invert`]) × scale − mean[c]) / std[c].
public struct Preprocessing: Sendable, Codable, Hashable {
    public var width: Int
    public var height: Int
    /// For `center`: the short side is resized to this before cropping (e.g. 256 for a 224 crop).
    /// nil means the short side is resized straight to the crop size.
    public var resizeShortSide: Int?
    public var crop: CropMode
    public var channelOrder: ChannelOrder
    public var layout: TensorLayout
    public var scale: Float
    public var mean: [Float]
    public var std: [Float]
    /// Element type of the model input (float32 or float16).
    public var dtype: DType
    /// Invert intensities (255 − v) before scaling, for models trained on light-on-dark images.
    public var invert: Bool

    public init(width: Int, height: Int, resizeShortSide: Int? = nil, crop: CropMode = .center,
                channelOrder: ChannelOrder = .rgb, layout: TensorLayout = .nchw, scale: Float = 1.0 / 255.0,
                mean: [Float] = [0, 0, 0], std: [Float] = [1, 1, 1], dtype: DType = .float32, invert: Bool = false) {
        self.width = width
        self.height = height
        self.resizeShortSide = resizeShortSide
        self.crop = crop
        self.channelOrder = channelOrder
        self.layout = layout
        self.scale = scale
        self.mean = mean
        self.std = std
        self.dtype = dtype
        self.invert = invert
    }

    /// Channels written per pixel.
    public var channels: Int { channelOrder == .gray ? 1 : 3 }
    /// Elements of one preprocessed image.
    public var elementCount: Int { width * height * channels }
    /// Bytes of one preprocessed image.
    public var byteCount: Int { elementCount * dtype.byteSize }
}

/// Limits checked before any large allocation.
public struct ImageLimits: Sendable, Hashable {
    public var maxEncodedBytes: Int
    public var maxPixels: Int
    public init(maxEncodedBytes: Int = 16 << 20, maxPixels: Int = 100_000_000) {
        self.maxEncodedBytes = maxEncodedBytes
        self.maxPixels = maxPixels
    }
}

/// What was decoded, for responses and metrics.
public struct ImageInfo: Sendable, Hashable {
    public var format: String
    public var width: Int
    public var height: Int
    public var orientation: Int
    public init(format: String, width: Int, height: Int, orientation: Int) {
        self.format = format
        self.width = width
        self.height = height
        self.orientation = orientation
    }
}

/// Image errors. Every case maps to JSON-RPC -32602 (invalid params) with `message`.
public struct ImageError: Error, CustomStringConvertible, Sendable, Hashable {
    public enum Kind: String, Sendable {
        case unsupportedFormat = "unsupported_format"
        case corrupt = "corrupt_image"
        case tooLarge = "image_too_large"
        case empty = "empty_image"
    }
    public let kind: Kind
    public let message: String
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { message }
}
