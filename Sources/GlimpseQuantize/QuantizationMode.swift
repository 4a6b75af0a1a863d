/// How weights are stored in the variant file.
public enum QuantizationMode: Sendable, Hashable, CustomStringConvertible {
    /// Float16 initializers, each followed by `Cast(to: FLOAT)`; inputs and outputs stay float32.
    case fp16
    /// Symmetric int8 per output channel, as weight-only QDQ: `DequantizeLinear(int8, scale, 0, axis)`.
    case int8Linear
    /// Weight sharing: 2^bits centroids per tensor (1...8 bits), stored as a uint8 index tensor and
    /// a float look-up table, as `Gather(table, Cast(indices, INT32))`, times per-channel scales by
    /// default (see `QuantizationOptions.kmeansChannelScales`). Indices take a byte each at any width.
    case int8KMeans(bits: Int)
    /// Static int8 QDQ: int8 weights symmetric per output channel, uint8 activations per tensor with
    /// ranges from calibration images, int32 biases; `QuantizeLinear`/`DequantizeLinear` pairs around
    /// the inputs of Conv, Gemm and MatMul (see `StaticQuantizer`). Needs calibration inputs.
    case int8Static

    /// Parses the command-line spelling: `fp16`, `int8-linear`, `int8-kmeans` (with `bits`), `int8-static`.
    public init(name: String, bits: Int = 8) throws {
        switch name {
        case "fp16": self = .fp16
        case "int8-linear": self = .int8Linear
        case "int8-static": self = .int8Static
        case "int8-kmeans":
            guard (1...8).contains(bits) else {
                throw QuantizationError(.invalidArgument, "--bits must be in 1...8 for int8-kmeans, got \(bits)")
            }
            self = .int8KMeans(bits: bits)
        default:
            throw QuantizationError(.invalidArgument, "unknown mode \"\(name)\" (known: fp16, int8-linear, int8-kmeans, int8-static)")
        }
    }

    public var name: String {
        switch self {
        case .fp16: return "fp16"
        case .int8Linear: return "int8-linear"
        case .int8KMeans: return "int8-kmeans"
        case .int8Static: return "int8-static"
        }
    }

    public var description: String {
        if case .int8KMeans(let bits) = self { return "int8-kmeans (\(bits)-bit)" }
        return name
    }

    /// A file-name suffix: `fp16`, `int8-linear`, `int8-kmeans` or `int8-kmeans4` for 4 bits, `int8-static`.
    public var fileSuffix: String {
        if case .int8KMeans(let bits) = self, bits != 8 { return "int8-kmeans\(bits)" }
        return name
    }
}

/// Tuning knobs of `ModelQuantizer`.
public struct QuantizationOptions: Sendable, Hashable {
    /// Float initializers with fewer elements (biases, batch-norm vectors) stay float32.
    public var minimumElements: Int
    /// Upper bound on Lloyd iterations per tensor for `int8KMeans`.
    public var kmeansIterations: Int

    /// Starting centroids of k-means.
    public var kmeansInitialization: KMeansInitialization

    /// k-means clusters weights divided by their output channel's max |w|, and the variant
    /// multiplies the looked-up values back by that per-channel scale (`Mul`). Off: plain per-tensor.
    public var kmeansChannelScales: Bool

    public init(minimumElements: Int = 1024, kmeansIterations: Int = 1000, kmeansInitialization: KMeansInitialization = .mixed,
                kmeansChannelScales: Bool = true) {
        self.kmeansChannelScales = kmeansChannelScales
        self.minimumElements = minimumElements
        self.kmeansIterations = kmeansIterations
        self.kmeansInitialization = kmeansInitialization
    }
}

/// Starting centroids of the k-means weight clustering (all deterministic).
public enum KMeansInitialization: String, Sendable, Hashable, CaseIterable {
    /// Evenly spaced over [min, max]: keeps centroids for rare large weights.
    case linear
    /// At the quantiles of the weights: centroids follow the density.
    case quantile
    /// Half linear, half quantile: the default, best on SqueezeNet 1.1 at 6 to 8 bits.
    case mixed
}

/// How `StaticQuantizer` turns the values a tensor took on the calibration images into its range.
public enum CalibrationMethod: Sendable, Hashable, CustomStringConvertible {
    /// The smallest and largest value seen: nothing saturates, but one outlier widens every step.
    case minMax
    /// Drops the `(100 − percentile)/2` % most extreme values at each end (a 2048-bin histogram
    /// over the min/max range, read at those quantiles): a few outliers saturate, and the other
    /// values get finer steps.
    case percentile(Double)

    /// The default percentile, 99.99 %.
    public static let defaultPercentile = 99.99

    /// Parses `minmax` or `percentile` (with `percentile`, in (50, 100]).
    public init(name: String, percentile: Double = CalibrationMethod.defaultPercentile) throws {
        switch name {
        case "minmax", "min-max": self = .minMax
        case "percentile":
            guard percentile > 50, percentile <= 100 else {
                throw QuantizationError(.invalidArgument, "--percentile must be in (50, 100], got \(percentile)")
            }
            self = .percentile(percentile)
        default:
            throw QuantizationError(.invalidArgument, "unknown calibration method \"\(name)\" (known: minmax, percentile)")
        }
    }

    public var description: String {
        switch self {
        case .minMax: return "minmax"
        case .percentile(let p): return "percentile \(p)%"
        }
    }
}
