import GlimpseKernels

/// Window attributes shared by Conv and the pooling operators (ONNX semantics).
public struct WindowAttributes: Sendable, Equatable {
    public enum AutoPad: String, Sendable { case notSet = "NOTSET", sameUpper = "SAME_UPPER", sameLower = "SAME_LOWER", valid = "VALID" }
    public var kernelShape: [Int]?
    public var strides: [Int]
    public var dilations: [Int]
    /// [top, left, bottom, right]
    public var pads: [Int]
    public var autoPad: AutoPad
    public var ceilMode: Bool

    public init(kernelShape: [Int]? = nil, strides: [Int] = [1, 1], dilations: [Int] = [1, 1],
                pads: [Int] = [0, 0, 0, 0], autoPad: AutoPad = .notSet, ceilMode: Bool = false) {
        self.kernelShape = kernelShape
        self.strides = strides
        self.dilations = dilations
        self.pads = pads
        self.autoPad = autoPad
        self.ceilMode = ceilMode
    }

    /// Geometry of the window over an input plane of `h × w` with `channels` channels.
    public func geometry(channels: Int, h: Int, w: Int, kernel: [Int]) throws -> ConvGeometry {
        guard kernel.count == 2, strides.count == 2, dilations.count == 2, pads.count == 4 else {
            throw EngineError("only 2-D windows are supported (kernel \(kernel), strides \(strides), pads \(pads))")
        }
        guard strides.allSatisfy({ $0 >= 1 }), dilations.allSatisfy({ $0 >= 1 }), kernel.allSatisfy({ $0 >= 1 }),
              pads.allSatisfy({ $0 >= 0 }) else {
            throw EngineError("invalid window: kernel \(kernel), strides \(strides), dilations \(dilations), pads \(pads)")
        }
        let input = [h, w]
        var padBegin = [pads[0], pads[1]], out = [0, 0]
        for d in 0..<2 {
            let extent = (kernel[d] - 1) * dilations[d] + 1
            switch autoPad {
            case .notSet:
                let span = input[d] + pads[d] + pads[d + 2] - extent
                guard span >= 0 else { throw EngineError("window \(extent) larger than padded input \(input[d] + pads[d] + pads[d + 2])") }
                out[d] = (ceilMode ? (span + strides[d] - 1) / strides[d] : span / strides[d]) + 1
                if ceilMode && (out[d] - 1) * strides[d] >= input[d] + pads[d] { out[d] -= 1 }
            case .valid:
                guard input[d] >= extent else { throw EngineError("window \(extent) larger than input \(input[d])") }
                out[d] = (input[d] - extent) / strides[d] + 1
                padBegin[d] = 0
            case .sameUpper, .sameLower:
                out[d] = (input[d] + strides[d] - 1) / strides[d]
                let total = max(0, (out[d] - 1) * strides[d] + extent - input[d])
                padBegin[d] = autoPad == .sameUpper ? total / 2 : total - total / 2
            }
        }
        guard out[0] >= 1, out[1] >= 1 else { throw EngineError("empty output for input \(input)") }
        return ConvGeometry(inChannels: channels, inHeight: h, inWidth: w, kernelHeight: kernel[0], kernelWidth: kernel[1],
                            strideH: strides[0], strideW: strides[1], dilationH: dilations[0], dilationW: dilations[1],
                            padTop: padBegin[0], padLeft: padBegin[1], outHeight: out[0], outWidth: out[1])
    }
}

/// Epilogue activation fused into Conv/Gemm: clamp to bounds (ReLU = [0, inf], ReLU6 = [0, 6]),
/// then, for Conv, optionally swish (x·sigmoid(x)).
public struct Activation: Sendable, Equatable {
    public var lower: Float = -.infinity
    public var upper: Float = .infinity
    public var swish = false
    public init(lower: Float = -.infinity, upper: Float = .infinity) {
        self.lower = lower
        self.upper = upper
    }
    public var isIdentity: Bool { lower == -.infinity && upper == .infinity && !swish }
}
