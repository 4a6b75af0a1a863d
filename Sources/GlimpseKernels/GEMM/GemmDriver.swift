/// Blocked single-precision GEMM over the 6×32 micro-kernel: C[M×N] = A[M×K]·B[K×N] with a fused
/// epilogue. A is pre-packed (see `GemmPacking`); B comes from a `GemmBSource` one panel at a time.
/// Callers split work across threads by column panels (`panels`), each with its own scratch.
public enum GemmDriver {
    /// K block size: a 256 × 32 B panel (32 KiB) stays in L1/L2 while all A tiles stream past it.
    public static let kBlock = 256

    /// Bytes of packed B that one block of column panels may take (see `panelsPerBlock`).
    public static let blockBytes = 32 << 10

    /// Fewest row tiles for which panels are blocked. With few rows each row of C is already a
    /// stream of consecutive panels, and blocking made MobileNetV2's first layer (6 tiles) 3–5 %
    /// slower; SqueezeNet's (11 tiles) became 8 % faster on one thread and 17 % on two.
    public static let blockMinTiles = 8

    /// Column panels packed together and multiplied tile by tile: each 6-row tile of A runs over
    /// all of them before the next, so every row of C is written `panelsPerBlock · 128` bytes at a
    /// time instead of 128. A short reduction makes the GEMM a stream of stores (a 1×1 convolution
    /// of 16 channels does 16 FMA steps per 12 vectors stored), and 96 rows of 2 cache lines each
    /// per panel left the stores waiting: 96 × 12544 × 16 took 0.60 ms with one panel at a time
    /// and 0.34 with 16 (`gemm-bench`); inside MobileNetV2 that layer became 12–17 % faster. The
    /// block stays within `blockBytes`, in L1 (16 KiB and 64 KiB measured the same).
    @inline(__always)
    public static func panelsPerBlock(kc: Int) -> Int {
        max(1, min(16, blockBytes / (kc * GemmTile.nr * 4)))
    }

    /// Floats of per-thread scratch `run` needs.
    public static func scratchCount(k: Int) -> Int {
        let kc = min(k, kBlock)
        return panelsPerBlock(kc: kc) * kc * GemmTile.nr + 16
    }

    public static func panelCount(n: Int) -> Int { (n + GemmTile.nr - 1) / GemmTile.nr }

    ///
    /// `rowTiles` limits the work to those 6-row tiles of C (all by default): threads that split a
    /// small plane by rows write whole rows of C, and never share a cache line inside one.
    ///
    /// Batch folded into N: with `imageColumns` < N, column j of the folded C is column
    /// j % imageColumns of image j / imageColumns, whose C (and residual) starts `imageStride` floats
    /// after the previous image's; `imageColumns` must be at least 32 so a tile spans at most two images.
    ///
    /// The micro-kernel is the dispatched ISA's (`KernelDispatch`): `f32_gemm_6x32_avx512` with
    /// AVX-512's 32 registers, `f32_gemm_6x16_avx2` otherwise; both read the same packed operands.
    @inline(__always)
    public static func run<B: GemmBSource>(
        m: Int, n: Int, k: Int, packedA: UnsafePointer<Float>, b: B,
        c: UnsafeMutablePointer<Float>, ldc: Int, epilogue: GemmEpilogue,
        panels: Range<Int>, rowTiles: Range<Int>? = nil, scratch: UnsafeMutablePointer<Float>,
        imageColumns: Int = .max, imageStride: Int = 0
    ) {
        if KernelDispatch.usesAVX512 {
            run(F32Gemm6x32AVX512.self, m: m, n: n, k: k, packedA: packedA, b: b, c: c, ldc: ldc, epilogue: epilogue,
                panels: panels, rowTiles: rowTiles, scratch: scratch, imageColumns: imageColumns, imageStride: imageStride)
        } else {
            run(F32Gemm6x16AVX2.self, m: m, n: n, k: k, packedA: packedA, b: b, c: c, ldc: ldc, epilogue: epilogue,
                panels: panels, rowTiles: rowTiles, scratch: scratch, imageColumns: imageColumns, imageStride: imageStride)
        }
    }

    @inline(__always)
    static func run<K: F32GemmMicroKernel, B: GemmBSource>(
        _ kernel: K.Type, m: Int, n: Int, k: Int, packedA: UnsafePointer<Float>, b: B,
        c: UnsafeMutablePointer<Float>, ldc: Int, epilogue: GemmEpilogue,
        panels: Range<Int>, rowTiles: Range<Int>?, scratch: UnsafeMutablePointer<Float>,
        imageColumns: Int, imageStride: Int
    ) {
        let mr = GemmTile.mr, nr = GemmTile.nr
        let mTiles = rowTiles ?? 0..<(m + mr - 1) / mr
        withUnsafeTemporaryAllocation(of: BlockPanel.self, capacity: 16) { slots in
            var k0 = 0
            repeat {
                let kc = min(kBlock, k - k0)
                let last = k0 + kc >= k
                let block = mTiles.count >= blockMinTiles ? panelsPerBlock(kc: kc) : 1
                var p0 = panels.lowerBound
                while p0 < panels.upperBound {
                    let p1 = min(panels.upperBound, p0 + block)
                    for p in p0..<p1 {
                        let n0 = p * nr
                        let nc = min(nr, n - n0)
                        let image = n0 / imageColumns, col = n0 - image * imageColumns
                        slots[p - p0] = BlockPanel(
                            b: b.panel(k0: k0, kc: kc, n0: n0, nc: nc, scratch: scratch + (p - p0) * kc * nr),
                            c: c + image * imageStride + col, col: col, columns: nc, inImage: min(nc, imageColumns - col),
                            residualShift: image * imageStride)
                    }
                    for t in mTiles {
                        let m0 = t * mr
                        let a = packedA + GemmPacking.aOffset(tile: t, k0: k0, kc: kc, m: m)
                        for slot in slots[0..<(p1 - p0)] {
                            let split = slot.inImage < slot.columns
                                ? GemmColumnSplit(column: slot.inImage, c: slot.c - slot.col + imageStride + m0 * ldc,
                                                  epilogue: last ? epilogue.shiftingResidual(by: slot.residualShift + imageStride)
                                                                       .offset(row: m0, col: 0) : nil)
                                : nil
                            K.run(
                                kc: kc, a: a, b: slot.b, c: slot.c + m0 * ldc, ldc: ldc, rows: min(mr, m - m0), cols: slot.columns,
                                accumulate: k0 > 0,
                                epilogue: last ? epilogue.shiftingResidual(by: slot.residualShift).offset(row: m0, col: slot.col) : nil,
                                split: split)
                        }
                    }
                    p0 = p1
                }
                k0 += kc
            } while k0 < k
        }
    }

    /// One column panel of a block: its packed B, where its columns go in C, and how many of them
    /// belong to the first image (the rest to the next one, when the batch is folded into N).
    @usableFromInline
    struct BlockPanel {
        var b: UnsafePointer<Float>
        var c: UnsafeMutablePointer<Float>
        var col: Int
        var columns: Int
        var inImage: Int
        var residualShift: Int
        @inline(__always) @usableFromInline
        init(b: UnsafePointer<Float>, c: UnsafeMutablePointer<Float>, col: Int, columns: Int, inImage: Int, residualShift: Int) {
            self.b = b
            self.c = c
            self.col = col
            self.columns = columns
            self.inImage = inImage
            self.residualShift = residualShift
        }
    }
}

/// A 6 × 32 micro-kernel over `GemmPacking`'s operands (see `f32_gemm_6x32_avx512`).
protocol F32GemmMicroKernel {
    static func run(kc: Int, a: UnsafePointer<Float>, b: UnsafePointer<Float>, c: UnsafeMutablePointer<Float>, ldc: Int,
                    rows: Int, cols: Int, accumulate: Bool, epilogue: GemmEpilogue?, split: GemmColumnSplit?)
}

enum F32Gemm6x32AVX512: F32GemmMicroKernel {
    @inline(__always)
    static func run(kc: Int, a: UnsafePointer<Float>, b: UnsafePointer<Float>, c: UnsafeMutablePointer<Float>, ldc: Int,
                    rows: Int, cols: Int, accumulate: Bool, epilogue: GemmEpilogue?, split: GemmColumnSplit?) {
        f32_gemm_6x32_avx512(kc: kc, a: a, b: b, c: c, ldc: ldc, rows: rows, cols: cols, accumulate: accumulate,
                             epilogue: epilogue, split: split)
    }
}

enum F32Gemm6x16AVX2: F32GemmMicroKernel {
    @inline(__always)
    static func run(kc: Int, a: UnsafePointer<Float>, b: UnsafePointer<Float>, c: UnsafeMutablePointer<Float>, ldc: Int,
                    rows: Int, cols: Int, accumulate: Bool, epilogue: GemmEpilogue?, split: GemmColumnSplit?) {
        f32_gemm_6x16_avx2(kc: kc, a: a, b: b, c: c, ldc: ldc, rows: rows, cols: cols, accumulate: accumulate,
                           epilogue: epilogue, split: split)
    }
}
