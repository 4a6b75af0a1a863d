import GlimpseKernels

/// A convolution run by Winograd F(2×2, 3×3) (`f32_winograd_2x2_3x3`), image by image: the padded input and
/// its transform V (split by input channels), the 16 GEMMs M_ξ = U_ξ·V_ξ (split by position), and
/// the output transform with bias and activation (split by output channels).
struct WinogradConvKernel: Kernel {
    let input: UnsafePointer<Float>
    let output: UnsafeMutablePointer<Float>
    let batch: Int
    let geometry: ConvGeometry
    let outChannels: Int
    /// U, packed position by position (`f32_winograd_2x2_3x3.packWeights`).
    let weights: UnsafePointer<Float>
    let bias: UnsafePointer<Float>
    let activation: Activation
    let workspace: UnsafeMutablePointer<Float>
    let threads: Int
    let retain: [AnyObject]

    /// Floats of workspace: the padded planes, V, M and each thread's GEMM scratch.
    static func workspaceFloats(_ g: ConvGeometry, outChannels: Int, threads: Int) -> Int {
        layout(g, outChannels: outChannels).scratch + threads * scratchPerThread(g) + 16
    }

    private static func scratchPerThread(_ g: ConvGeometry) -> Int {
        (GemmDriver.scratchCount(k: g.inChannels) + 31) / 16 * 16
    }

    /// Offsets of V, M and the GEMM scratch in the workspace (the padded planes come first).
    private static func layout(_ g: ConvGeometry, outChannels: Int) -> (v: Int, m: Int, scratch: Int) {
        let t = f32_winograd_2x2_3x3.Tiles(height: g.outHeight, width: g.outWidth)
        let stride = t.stride(bandRows: t.bandRows(cin: g.inChannels, cout: outChannels))
        let padded = (g.inChannels * t.paddedCount + 15) / 16 * 16
        let v = padded, m = v + f32_winograd_2x2_3x3.positions * g.inChannels * stride
        return (v, m, (m + f32_winograd_2x2_3x3.positions * outChannels * stride + 15) / 16 * 16)
    }

    func run(_ pool: ThreadPool) {
        let g = geometry, t = f32_winograd_2x2_3x3.Tiles(height: g.outHeight, width: g.outWidth)
        let cin = g.inChannels, cout = outChannels
        let (vAt, mAt, scratchAt) = Self.layout(g, outChannels: cout)
        let padded = workspace, v = workspace + vAt, m = workspace + mAt
        let perThread = Self.scratchPerThread(g)
        let eachU = GemmPacking.packedACount(m: cout, k: cin)
        let inPlane = g.inPixels, outPlane = g.outPixels
        let bandRows = t.bandRows(cin: cin, cout: cout), stride = t.stride(bandRows: bandRows)
        let inParts = min(threads, cin), outParts = min(threads, cout)
        for image in 0..<batch {
            let x = input + image * cin * inPlane, y = output + image * cout * outPlane
            pool.parallelFor(inParts) { part in
                for ci in (cin * part / inParts)..<(cin * (part + 1) / inParts) {
                    f32_winograd_2x2_3x3.pad(x + ci * inPlane, tiles: t, into: padded + ci * t.paddedCount)
                }
            }
            // Bands of tile rows: V and M of one band stay in L2 from transform to GEMM to transform.
            var first = 0
            while first < t.rows {
                let rows = first..<min(t.rows, first + bandRows), n = rows.count * t.columns
                pool.parallelFor(inParts) { part in
                    for ci in (cin * part / inParts)..<(cin * (part + 1) / inParts) {
                        f32_winograd_2x2_3x3.transformInput(padded + ci * t.paddedCount, tiles: t, rows: rows, into: v + ci * stride,
                                                positionStride: cin * stride)
                    }
                }
                pool.parallelTasks(f32_winograd_2x2_3x3.positions) { xi, thread in
                    GemmDriver.run(m: cout, n: n, k: cin, packedA: weights + xi * eachU,
                                   b: RowMajorB(base: v + xi * cin * stride, rowStride: stride),
                                   c: m + xi * cout * stride, ldc: stride, epilogue: .none,
                                   panels: 0..<GemmDriver.panelCount(n: n), scratch: workspace + scratchAt + thread * perThread)
                }
                pool.parallelFor(outParts) { part in
                    for co in (cout * part / outParts)..<(cout * (part + 1) / outParts) {
                        f32_winograd_2x2_3x3.transformOutput(m + co * stride, positionStride: cout * stride, tiles: t, rows: rows,
                                                 bias: bias[co], lower: activation.lower, upper: activation.upper,
                                                 into: y + co * outPlane)
                    }
                }
                first = rows.upperBound
            }
        }
    }
}
