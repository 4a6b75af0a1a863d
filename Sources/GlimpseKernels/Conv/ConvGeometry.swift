import CGlimpseSIMD

/// Shape of a 2-D convolution or pooling window over one NCHW image (per group for convolutions).
public struct ConvGeometry: Sendable, Hashable {
    public var inChannels: Int
    public var inHeight: Int
    public var inWidth: Int
    public var kernelHeight: Int
    public var kernelWidth: Int
    public var strideH: Int
    public var strideW: Int
    public var dilationH: Int
    public var dilationW: Int
    public var padTop: Int
    public var padLeft: Int
    public var outHeight: Int
    public var outWidth: Int

    public init(inChannels: Int, inHeight: Int, inWidth: Int, kernelHeight: Int, kernelWidth: Int,
                strideH: Int, strideW: Int, dilationH: Int, dilationW: Int, padTop: Int, padLeft: Int,
                outHeight: Int, outWidth: Int) {
        self.inChannels = inChannels
        self.inHeight = inHeight
        self.inWidth = inWidth
        self.kernelHeight = kernelHeight
        self.kernelWidth = kernelWidth
        self.strideH = strideH
        self.strideW = strideW
        self.dilationH = dilationH
        self.dilationW = dilationW
        self.padTop = padTop
        self.padLeft = padLeft
        self.outHeight = outHeight
        self.outWidth = outWidth
    }

    /// Rows of the im2col matrix: Cin·KH·KW.
    public var patchSize: Int { inChannels * kernelHeight * kernelWidth }
    public var outPixels: Int { outHeight * outWidth }
    public var inPixels: Int { inHeight * inWidth }

    /// True when the convolution is a plain GEMM over the input (1×1, stride 1, no padding).
    public var isPointwise: Bool {
        kernelHeight == 1 && kernelWidth == 1 && strideH == 1 && strideW == 1 && padTop == 0 && padLeft == 0
    }

    /// True when every im2col row is the input plane shifted by a constant (stride 1, output as
    /// wide as the input, as with "same" padding): column j reads input pixel j + dy·W + dx.
    public var isShiftedPlane: Bool {
        strideH == 1 && strideW == 1 && outWidth == inWidth
    }
}

/// Output pixels `first ..< first + 16` of a convolution whose output is as wide as its input
/// (`ConvGeometry.isShiftedPlane`), as row and column lanes, and which of them a tap (dy, dx) reads
/// from inside the input plane. Coordinates are floats: exact integers here (planes are far below
/// 2^23 pixels), with no integer vector division. Lanes from `count` on get a row no tap brings
/// inside the plane.
struct ShiftedLanes {
    let rows: SIMD16<Float>
    let cols: SIMD16<Float>

    @inline(__always)
    init(first: Int, count: Int, width: Int) {
        let ramp = SIMD16<Float>(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
        let j = SIMD16<Float>(repeating: Float(first)) + ramp
        let w = SIMD16<Float>(repeating: Float(width))
        let oh = ((j + 0.5) / w).rounded(.down)
        cols = j - oh * w
        rows = oh.replacing(with: -1e9, where: ramp .>= SIMD16<Float>(repeating: Float(count)))
    }

    /// Lanes computed earlier (the `rows` and `cols` of another value).
    @inline(__always)
    init(rows: SIMD16<Float>, cols: SIMD16<Float>) {
        self.rows = rows
        self.cols = cols
    }

    @inline(__always)
    func inside(dy: Int, dx: Int, height: Int, width: Int) -> SIMDMask<SIMD16<Int32>> {
        let ih = rows + SIMD16<Float>(repeating: Float(dy)), iw = cols + SIMD16<Float>(repeating: Float(dx))
        return (ih .>= 0) .& (ih .< SIMD16<Float>(repeating: Float(height)))
            .& (iw .>= 0) .& (iw .< SIMD16<Float>(repeating: Float(width)))
    }

    /// Lanes whose row + dy lies inside a plane of `height` rows.
    @inline(__always)
    func rowInside(dy: Int, height: Int) -> SIMDMask<SIMD16<Int32>> {
        let ih = rows + SIMD16<Float>(repeating: Float(dy))
        return (ih .>= 0) .& (ih .< SIMD16<Float>(repeating: Float(height)))
    }

    /// Lanes whose column + dx lies inside a plane `width` wide.
    @inline(__always)
    func colInside(dx: Int, width: Int) -> SIMDMask<SIMD16<Int32>> {
        let iw = cols + SIMD16<Float>(repeating: Float(dx))
        return (iw .>= 0) .& (iw .< SIMD16<Float>(repeating: Float(width)))
    }

    /// The 16 floats from `base + start` where `inside`, zero elsewhere. One whole-vector load when
    /// `start..<start+16` lies in `readable` (offsets from `base` that may be read); lane by lane at
    /// the ends of the readable memory.
    @inline(__always)
    static func load(_ base: UnsafePointer<Float>, _ start: Int, readable: Range<Int>,
                     inside: SIMDMask<SIMD16<Int32>>) -> SIMD16<Float> {
        if start >= readable.lowerBound && start &+ 16 <= readable.upperBound {
            let raw = UnsafeRawPointer(base + start).loadUnaligned(as: SIMD16<Float>.self)
            return SIMD16<Float>().replacing(with: raw, where: inside)
        }
        #if GLIMPSE_VNNI
        // A masked load reads only the lanes inside (in the plane, so readable). Lane by lane, the
        // loads at the ends of a tensor took about a tenth of mnist-8's second convolution.
        return glimpse_maskz_load_f32_512(unsafeBitCast(inside, to: SIMD8<Int64>.self), base + start)
        #else
        var lanes = SIMD16<Float>()
        for t in 0..<16 where inside[t] { lanes[t] = base[start + t] }
        return lanes
        #endif
    }
}
