/// Direct depthwise convolution of one channel plane, SIMD16 over the flat output of `PhasePlanes`:
/// the plane is copied once into its padded, stride-phase-split form, every tap of every output
/// vector is then one unconditional load and one FMA, and the valid columns are compacted into the
/// output through the fused epilogue (bias, requantization, residual, clamp, swish).
public enum DepthwiseConv {
    /// Floats of scratch one thread needs: one plane's (phase planes, flat output, tap offsets), or
    /// `f32_dwconv_8x16_same`'s if larger.
    public static func scratchCount(_ g: ConvGeometry) -> Int {
        max(PhasePlanes(g).scratchCount + (g.outPixels + 31) / 16 * 16 + 2 * g.kernelHeight * g.kernelWidth + 16,
            f32_dwconv_8x16_same.scratchCount(g), f32_dwconv_16c_lanes.scratchCount(g))
    }
}

/// Depthwise convolution of one channel (`g.inChannels` is ignored): out = clamp(bias + Σ w·in).
public func f32_dwconv_phased(
    input: UnsafePointer<Float>, weights: UnsafePointer<Float>, bias: Float,
    output: UnsafeMutablePointer<Float>, geometry g: ConvGeometry,
    lowerBound: Float, upperBound: Float, scratch: UnsafeMutablePointer<Float>
) {
    f32_dwconv_phased(input: input, weights: weights, bias: bias, output: output, geometry: g,
                      epilogue: GemmEpilogue(lowerBound: lowerBound, upperBound: upperBound), scratch: scratch)
}

/// Depthwise convolution of one channel with a fused epilogue applied as row 0, column = pixel
/// index (`rowBias` is ignored: pass the bias; `residual`, if any, is this plane's residual).
/// `scratch` holds `DepthwiseConv.scratchCount(g)` floats and should be 64-byte aligned.
public func f32_dwconv_phased(
    input: UnsafePointer<Float>, weights: UnsafePointer<Float>, bias: Float,
    output: UnsafeMutablePointer<Float>, geometry g: ConvGeometry,
    epilogue: GemmEpilogue, scratch: UnsafeMutablePointer<Float>
) {
    DepthwisePlane(geometry: g, scratch: scratch)
        .run(input: input, weights: weights, bias: bias, output: output, epilogue: epilogue)
}

/// A depthwise convolution prepared for one geometry and one scratch buffer (layout and tap
/// offsets computed once), run plane after plane.
public struct DepthwisePlane {
    let planes: PhasePlanes
    let flat: UnsafeMutablePointer<Float>
    let phases: UnsafeMutablePointer<Float>
    let dense: UnsafeMutablePointer<Float>
    let offsets: UnsafeMutablePointer<Int>
    let taps: Int

    /// `scratch` holds `DepthwiseConv.scratchCount(geometry)` floats, 64-byte aligned for best speed.
    public init(geometry g: ConvGeometry, scratch: UnsafeMutablePointer<Float>) {
        planes = PhasePlanes(g)
        flat = scratch
        phases = scratch + planes.flatCount
        dense = phases + planes.phaseCount * planes.phaseSize
        taps = g.kernelHeight * g.kernelWidth
        offsets = UnsafeMutableRawPointer(dense + (g.outPixels + 31) / 16 * 16).bindMemory(to: Int.self, capacity: taps)
        planes.tapOffsets(offsets)
    }

    public func run(input: UnsafePointer<Float>, weights: UnsafePointer<Float>, bias: Float,
                    output: UnsafeMutablePointer<Float>, epilogue e0: GemmEpilogue) {
        var e = e0
        e.rowBias = nil
        planes.fill(input: input, padValue: 0, phases: phases)
        let sum = WeightedSum(weights: weights, bias: SIMD16(repeating: bias))
        if planes.geometry.outWidth >= PhasePlanes.rowSweepMinWidth {
            planes.sweepRows(sum, phases: phases, offsets: offsets, taps: taps, store: DepthwiseStore(output: output, epilogue: e))
            return
        }
        planes.sweep(sum, phases: phases, offsets: offsets, taps: taps, flat: flat)
        planes.compactDense(flat, into: dense)
        // The epilogue over the dense plane; the last vector overlaps the one before instead of a scalar tail.
        let total = planes.geometry.outPixels
        var i = 0
        while i &+ 16 <= total {
            UnsafeMutableRawPointer(output + i).storeBytes(
                of: e.apply(UnsafeRawPointer(dense + i).loadUnaligned(as: SIMD16<Float>.self), row: 0, col: i), as: SIMD16<Float>.self)
            i &+= 16
        }
        if i < total {
            if total >= 16 {
                let last = total &- 16
                UnsafeMutableRawPointer(output + last).storeBytes(
                    of: e.apply(UnsafeRawPointer(dense + last).loadUnaligned(as: SIMD16<Float>.self), row: 0, col: last), as: SIMD16<Float>.self)
            } else {
                e.store(GemmEpilogue.load(dense, lanes: 0..<total), row: 0, col: 0, lanes: 0..<total, to: output)
            }
        }
    }
}

/// Σ weights[t]·v over the taps, starting from the bias.
struct WeightedSum: WindowReduce {
    let weights: UnsafePointer<Float>
    let bias: SIMD16<Float>

    @inline(__always)
    init(weights: UnsafePointer<Float>, bias: SIMD16<Float>) {
        self.weights = weights
        self.bias = bias
    }

    @inline(__always)
    func start() -> SIMD16<Float> { bias }

    @inline(__always)
    func combine(_ acc: inout SIMD16<Float>, tap: Int, _ v: SIMD16<Float>) {
        acc.addProduct(SIMD16(repeating: weights[tap]), v)
    }
}

/// Epilogue and store of one depthwise output vector (row sweep).
struct DepthwiseStore: PlaneStore {
    let output: UnsafeMutablePointer<Float>
    let epilogue: GemmEpilogue

    @inline(__always)
    init(output: UnsafeMutablePointer<Float>, epilogue: GemmEpilogue) {
        self.output = output
        self.epilogue = epilogue
    }

    @inline(__always)
    func full(_ v: SIMD16<Float>, y: Int, x: Int, pixel: Int) {
        UnsafeMutableRawPointer(output + pixel).storeBytes(of: epilogue.apply(v, row: 0, col: pixel), as: SIMD16<Float>.self)
    }

    @inline(never)
    func partial(_ v: SIMD16<Float>, y: Int, x: Int, pixel: Int, valid: Int) {
        epilogue.store(v, row: 0, col: pixel, lanes: 0..<valid, to: output + pixel)
    }
}
