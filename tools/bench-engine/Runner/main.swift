// Glimpse engine benchmark runner (no test framework, no server dependencies).
//
// Usage: bench-engine [--seconds S] [--batches 1,8,32] [--threads 1,2] [--widen]
//                     [--split auto|always|never] MODEL.onnx...
//        bench-engine --serve [--widen] [--split auto|always|never]
//        bench-engine --pool-overhead [--threads 1,2]
//        bench-engine --gemm M,K,H,BATCH | --dw C,H,STRIDE
// Prints one JSON object per line: model, batch, threads, median_ms, img_s, gflops, pct_peak, and
// split (how batches of several items ran: "split" into single items, "whole", or "-"), and peak
// ("int8" when the model runs int8 kernels: pct_peak then divides by the measured int8 peak).
// --split sets `EngineOptions.batchSplitting` (default auto: the engine times both ways on its first
// runs of each batch size; the warm-up runs until it has decided).
// --pool-overhead prints, per thread count, the wall time of one parallel region of the engine's
// thread pool with 1, 2, 8 and 64 near-empty tasks (no model is loaded).
// --gemm and --dw time one int8 kernel alone (a 1×1 convolution as a batch GEMM; a 3×3 depthwise
// convolution) and print the best of several averages, to compare kernel changes on a noisy host by
// alternating two builds.
// --widen loads with `EngineOptions.widenFixedBatch`, so fixed-batch-1 models that pass the check
// at load run every batch size (otherwise they are measured at batch 1 only).
// --serve reads requests "THREADS BATCH SECONDS MODEL.onnx" from stdin instead, one JSON line back
// each (tools/bench-engine/paired.py alternates it with onnxruntime's side, measurement by
// measurement).
import Foundation
import GlimpseEngine
import GlimpseKernels
import GlimpseONNX
import GlimpseTensor

do {
    _ = try KernelDispatch.validate()
} catch {
    FileHandle.standardError.write("bench-engine: \(error)\n".data(using: .utf8)!)
    exit(2)
}

var batches = [1, 8, 32]
var threadCounts = [1, 2]
var seconds = 2.0
var widen = false
var splitting = BatchSplitting.auto
var serve = false
/// `--pool-overhead`: the cost of one parallel region of the engine's thread pool (no model).
var poolOverhead = false
var models: [String] = []
var dwSpec: [Int] = []
var gemmSpec: [Int] = []
var sgemmSpec: [Int] = []
var args = CommandLine.arguments.dropFirst()
while let a = args.first {
    args = args.dropFirst()
    switch a {
    case "--batches": batches = (args.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
    case "--threads": threadCounts = (args.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
    case "--seconds": seconds = Double(args.popFirst() ?? "") ?? seconds
    case "--widen": widen = true
    case "--serve": serve = true
    case "--pool-overhead": poolOverhead = true
    case "--sgemm": sgemmSpec = (args.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
    case "--gemm": gemmSpec = (args.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
    case "--dw": dwSpec = (args.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
    case "--split":
        switch args.popFirst() {
        case "always": splitting = .always
        case "never": splitting = .never
        default: splitting = .auto
        }
    default: models.append(a)
    }
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// Single-core fp32 peak measured here and now with the registers of the kernels in use: 16
/// independent zmm FMA chains for the AVX-512 variants, 12 ymm chains otherwise (enough to fill two
/// FMA ports with 4- or 5-cycle latency, within AVX2's 16 registers), for about 0.3 s. The "% of peak"
/// column divides by this times the thread count, so it follows the machine the benchmark runs on.
/// (Sixteen zmm chains on an AVX2 machine are 32 ymm ones and spill: they read a third of its peak.)
func measurePeakPerCore() -> Double {
    KernelDispatch.usesAVX512 ? measurePeakZMM() : measurePeakYMM()
}

func measurePeakYMM() -> Double {
    var acc = (0..<12).map { SIMD8<Float>(repeating: Float($0) * 1e-3) }
    let m = SIMD8<Float>(repeating: 0.999_999), a = SIMD8<Float>(repeating: 1e-7)
    var best = 0.0
    for _ in 0..<3 {
        let steps = 4_000_000
        let t0 = now()
        acc.withUnsafeMutableBufferPointer { v in
            var x0 = v[0], x1 = v[1], x2 = v[2], x3 = v[3], x4 = v[4], x5 = v[5], x6 = v[6], x7 = v[7]
            var x8 = v[8], x9 = v[9], x10 = v[10], x11 = v[11]
            for _ in 0..<steps {
                x0 = a.addingProduct(x0, m); x1 = a.addingProduct(x1, m); x2 = a.addingProduct(x2, m); x3 = a.addingProduct(x3, m)
                x4 = a.addingProduct(x4, m); x5 = a.addingProduct(x5, m); x6 = a.addingProduct(x6, m); x7 = a.addingProduct(x7, m)
                x8 = a.addingProduct(x8, m); x9 = a.addingProduct(x9, m); x10 = a.addingProduct(x10, m); x11 = a.addingProduct(x11, m)
            }
            v[0] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11
        }
        let dt = now() - t0
        best = max(best, Double(steps) * 12 * 8 * 2 / dt / 1e9)
    }
    if acc[0].sum() == .infinity { print("") }  // keeps the loop's result alive
    return best
}

func measurePeakZMM() -> Double {
    var acc = (0..<16).map { SIMD16<Float>(repeating: Float($0) * 1e-3) }
    let m = SIMD16<Float>(repeating: 0.999_999), a = SIMD16<Float>(repeating: 1e-7)
    var best = 0.0
    for _ in 0..<3 {
        let steps = 2_000_000
        let t0 = now()
        acc.withUnsafeMutableBufferPointer { v in
            var x0 = v[0], x1 = v[1], x2 = v[2], x3 = v[3], x4 = v[4], x5 = v[5], x6 = v[6], x7 = v[7]
            var x8 = v[8], x9 = v[9], x10 = v[10], x11 = v[11], x12 = v[12], x13 = v[13], x14 = v[14], x15 = v[15]
            for _ in 0..<steps {
                x0 = a.addingProduct(x0, m); x1 = a.addingProduct(x1, m); x2 = a.addingProduct(x2, m); x3 = a.addingProduct(x3, m)
                x4 = a.addingProduct(x4, m); x5 = a.addingProduct(x5, m); x6 = a.addingProduct(x6, m); x7 = a.addingProduct(x7, m)
                x8 = a.addingProduct(x8, m); x9 = a.addingProduct(x9, m); x10 = a.addingProduct(x10, m); x11 = a.addingProduct(x11, m)
                x12 = a.addingProduct(x12, m); x13 = a.addingProduct(x13, m); x14 = a.addingProduct(x14, m); x15 = a.addingProduct(x15, m)
            }
            v[0] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11 + x12 + x13 + x14 + x15
        }
        let dt = now() - t0
        best = max(best, Double(steps) * 16 * 16 * 2 / dt / 1e9)
    }
    if acc[0].sum() == .infinity { print("") }  // keeps the loop's result alive
    return best
}

/// Single-core int8 peak measured here and now: 16 independent `vpdpbusd` chains (u8 × s8 → s32,
/// 64 multiply-adds each, counted as 128 operations) for about 0.3 s. Models whose quantized nodes
/// run the int8 kernels report "% of peak" against this one ("peak": "int8" in their JSON line).
func measureInt8PeakPerCore() -> Double {
    var acc = [SIMD16<Int32>](repeating: SIMD16<Int32>(), count: 16)
    let u = SIMD16<Int32>(repeating: 0x0102_0304), s = SIMD16<Int32>(repeating: 0x0101_0101)
    var best = 0.0
    for _ in 0..<3 {
        let steps = 1_000_000
        let t0 = now()
        acc.withUnsafeMutableBufferPointer { v in
            var x0 = v[0], x1 = v[1], x2 = v[2], x3 = v[3], x4 = v[4], x5 = v[5], x6 = v[6], x7 = v[7]
            var x8 = v[8], x9 = v[9], x10 = v[10], x11 = v[11], x12 = v[12], x13 = v[13], x14 = v[14], x15 = v[15]
            for _ in 0..<steps {
                x0 = dpbusd(x0, u, s); x1 = dpbusd(x1, u, s); x2 = dpbusd(x2, u, s); x3 = dpbusd(x3, u, s)
                x4 = dpbusd(x4, u, s); x5 = dpbusd(x5, u, s); x6 = dpbusd(x6, u, s); x7 = dpbusd(x7, u, s)
                x8 = dpbusd(x8, u, s); x9 = dpbusd(x9, u, s); x10 = dpbusd(x10, u, s); x11 = dpbusd(x11, u, s)
                x12 = dpbusd(x12, u, s); x13 = dpbusd(x13, u, s); x14 = dpbusd(x14, u, s); x15 = dpbusd(x15, u, s)
            }
            v[0] = x0 &+ x1 &+ x2 &+ x3 &+ x4 &+ x5 &+ x6 &+ x7 &+ x8 &+ x9 &+ x10 &+ x11 &+ x12 &+ x13 &+ x14 &+ x15
        }
        let dt = now() - t0
        best = max(best, Double(steps) * 16 * 64 * 2 / dt / 1e9)
    }
    if acc[0].wrappedSum() == 42 { print("") }  // keeps the loop's result alive
    return best
}

/// Single-core int8 peak of the AVX2 kernels: 12 independent chains of `vpmaddwd` + `vpaddd` (16
/// multiply-adds each, counted as 32 operations), as `qs8_gemm_8x32_avx2` multiplies.
func measureInt8PeakAVX2() -> Double {
    var acc = (0..<12).map { SIMD8<Int32>(repeating: Int32($0)) }
    let s = SIMD16<Int16>(repeating: -2)
    // Each product reads its own chain's sum, so nothing in the loop is invariant.
    @inline(__always) func w(_ x: SIMD8<Int32>) -> SIMD16<Int16> { unsafeBitCast(x, to: SIMD16<Int16>.self) }
    var best = 0.0
    for _ in 0..<3 {
        let steps = 2_000_000
        let t0 = now()
        acc.withUnsafeMutableBufferPointer { v in
            var x0 = v[0], x1 = v[1], x2 = v[2], x3 = v[3], x4 = v[4], x5 = v[5], x6 = v[6], x7 = v[7]
            var x8 = v[8], x9 = v[9], x10 = v[10], x11 = v[11]
            for _ in 0..<steps {
                x0 = madd16(x0, w(x0), s); x1 = madd16(x1, w(x1), s); x2 = madd16(x2, w(x2), s); x3 = madd16(x3, w(x3), s)
                x4 = madd16(x4, w(x4), s); x5 = madd16(x5, w(x5), s); x6 = madd16(x6, w(x6), s); x7 = madd16(x7, w(x7), s)
                x8 = madd16(x8, w(x8), s); x9 = madd16(x9, w(x9), s); x10 = madd16(x10, w(x10), s); x11 = madd16(x11, w(x11), s)
            }
            v[0] = x0 &+ x1 &+ x2 &+ x3 &+ x4 &+ x5 &+ x6 &+ x7 &+ x8 &+ x9 &+ x10 &+ x11
        }
        let dt = now() - t0
        best = max(best, Double(steps) * 12 * 16 * 2 / dt / 1e9)
    }
    if acc[0].wrappedSum() == 42 { print("") }  // keeps the loop's result alive
    return best
}

/// Wall time of one parallel region with `tasks` near-empty tasks on `threads` threads, back to back
/// as an inference's operators run: what each operator pays to spread its work (median of 5 rounds).
func measurePoolOverhead(threads: Int, tasks: Int) -> Double {
    let pool = ThreadPool(threads: threads)
    let sink = UnsafeMutablePointer<Int>.allocate(capacity: 64 * max(threads, 1))
    defer { sink.deallocate() }
    sink.initialize(repeating: 0, count: 64 * max(threads, 1))
    var rounds: [Double] = []
    for _ in 0..<5 {
        let n = 20_000
        let t0 = now()
        for _ in 0..<n { pool.parallelTasks(tasks) { task, thread in sink[thread * 64] &+= task } }
        rounds.append((now() - t0) / Double(n))
    }
    return rounds.sorted()[2]
}

/// Bytes for a kernel benchmark, filled with a fixed pattern (never freed: the process exits after).
func benchBytes<T: FixedWidthInteger>(_ count: Int, _ type: T.Type, step: Int) -> UnsafeMutablePointer<T> {
    let p = UnsafeMutablePointer<T>.allocate(capacity: max(count, 1) + 64)
    for i in 0..<(max(count, 1) + 64) { p[i] = T(truncatingIfNeeded: i &* step) }
    return p
}

/// Times `body` (one image's worth of the kernel) over repeated runs and prints the best of `trials`
/// averages: `--gemm` and `--dw` compare kernel changes without a model around them.
func kernelBench(_ label: String, ops: Double, trials: Int, _ body: () -> Void) {
    let reps = max(1, Int(2e9 / max(ops, 1)))
    var best = Double.infinity
    for _ in 0..<trials {
        let t0 = now()
        for _ in 0..<reps { body() }
        best = min(best, (now() - t0) / Double(reps))
    }
    print("\(label): \(String(format: "%.2f", best * 1e6)) us, \(String(format: "%.1f", ops / best / 1e9)) GOP/s")
}

if !sgemmSpec.isEmpty {
    // --sgemm M,K,N: the fp32 GEMM (GemmDriver, the dispatched micro-kernel) of packed A and B with a
    // bias and clamp epilogue, one thread: a 1×1 convolution of K to M channels on N pixels.
    guard sgemmSpec.count == 3, sgemmSpec.allSatisfy({ $0 > 0 }) else { print("--sgemm M,K,N (all positive)"); exit(2) }
    let (m, k, n) = (sgemmSpec[0], sgemmSpec[1], sgemmSpec[2])
    func floats(_ count: Int) -> UnsafeMutablePointer<Float> {
        let p = UnsafeMutablePointer<Float>.allocate(capacity: count + 64)
        for i in 0..<(count + 64) { p[i] = Float(i % 13) * 0.01 }
        return p
    }
    let a = floats(m * k), b = floats(k * n), c = floats(m * n), bias = floats(m)
    let packedA = floats(GemmPacking.packedACount(m: m, k: k)), packedB = floats(GemmPacking.packedBCount(n: n, k: k))
    GemmPacking.packA(a, m: m, k: k, rowStride: k, colStride: 1, into: packedA)
    GemmPacking.packB(b, k: k, n: n, rowStride: n, colStride: 1, into: packedB)
    let scratch = floats(GemmDriver.scratchCount(k: k))
    let epilogue = GemmEpilogue(rowBias: bias, lowerBound: 0, upperBound: 6)
    kernelBench("sgemm m=\(m) k=\(k) n=\(n) (\(KernelDispatch.isa))", ops: 2.0 * Double(m * k * n), trials: 5) {
        GemmDriver.run(m: m, n: n, k: k, packedA: packedA, b: PackedB(base: packedB, k: k), c: c, ldc: n, epilogue: epilogue,
                       panels: 0..<GemmDriver.panelCount(n: n), scratch: scratch)
    }
    exit(0)
}
if !gemmSpec.isEmpty {
    // --gemm M,K,H,BATCH: an int8 1×1 convolution of K to M channels on H×H planes, the batch as one GEMM.
    guard gemmSpec.count == 4, gemmSpec.allSatisfy({ $0 > 0 }) else { print("--gemm M,K,H,BATCH (all positive)"); exit(2) }
    let (m, k, h, b) = (gemmSpec[0], gemmSpec[1], gemmSpec[2], gemmSpec[3])
    let g = ConvGeometry(inChannels: k, inHeight: h, inWidth: h, kernelHeight: 1, kernelWidth: 1, strideH: 1, strideW: 1,
                         dilationH: 1, dilationW: 1, padTop: 0, padLeft: 0, outHeight: h, outWidth: h)
    let conv = QS8Conv(geometry: g, outChannels: m, inputZeroPoint: 3)
    let x = benchBytes(b * k * h * h, UInt8.self, step: 7), y = benchBytes(b * m * h * h, UInt8.self, step: 0)
    let w = benchBytes(m * k, Int8.self, step: 5), a = benchBytes(QS8Gemm.packedACount(m: m, k: k), Int8.self, step: 0)
    QS8Gemm.packA(w, m: m, k: k, into: a)
    let requant = RequantStorage(Requantization(bias: [Int32](repeating: 1, count: m), scale: [Float](repeating: 0.001, count: m), zeroPoint: 2))
    let scratch = benchBytes(conv.batchScratchBytes, UInt8.self, step: 0)
    let tiles = conv.batchTiles(batch: b)
    kernelBench("gemm m=\(m) k=\(k) \(h)x\(h) batch \(b)", ops: 2.0 * Double(m * k * h * h * b), trials: 5) {
        for t in 0..<tiles {
            conv.runBatchTile(t, batch: b, rows: 0..<m, x: x, y: y, packedA: a, requant: requant.pointers, scratch: scratch)
        }
    }
    exit(0)
}
if !dwSpec.isEmpty {
    // --dw C,H,STRIDE: an int8 3×3 depthwise convolution (padding 1) of C channels on H×H planes.
#if GLIMPSE_VNNI
    guard dwSpec.count == 3, dwSpec.allSatisfy({ $0 > 0 }) else { print("--dw C,H,STRIDE (all positive)"); exit(2) }
    let (c, h, st) = (dwSpec[0], dwSpec[1], dwSpec[2])
    let oh = (h + 2 - 3) / st + 1
    let g = ConvGeometry(inChannels: 1, inHeight: h, inWidth: h, kernelHeight: 3, kernelWidth: 3, strideH: st, strideW: st,
                         dilationH: 1, dilationW: 1, padTop: 1, padLeft: 1, outHeight: oh, outWidth: oh)
    guard let dw = QU8DepthwiseVNNI(geometry: g, inputZeroPoint: 3) else { print("geometry not supported"); exit(2) }
    let x = benchBytes(c * h * h, UInt8.self, step: 7), y = benchBytes(c * oh * oh, UInt8.self, step: 0)
    let words = QU8DepthwiseVNNI.packWeights(benchBytes(c * 9, Int8.self, step: 5), channels: c, kernelHeight: 3, kernelWidth: 3)
    let requant = RequantStorage(Requantization(bias: [Int32](repeating: 1, count: c), scale: [Float](repeating: 0.01, count: c), zeroPoint: 2))
    let scratch = benchBytes(dw.scratchBytes, UInt8.self, step: 0)
    words.withUnsafeBufferPointer { wb in
        guard let w = wb.baseAddress else { return }
        kernelBench("depthwise \(c)×\(h)×\(h) stride \(st)", ops: 2.0 * Double(c * oh * oh * 9), trials: 7) {
            dw.runChannels(0..<c, x: x, w: w, y: y, requant: requant.pointers, scratch: scratch)
        }
    }
#else
    print("--dw needs a VNNI build")
#endif
    exit(0)
}
if poolOverhead {
    for threads in threadCounts {
        for tasks in [1, 2, 8, 64] {
            print(String(format: "{\"pool_overhead_ns\": %.0f, \"threads\": %d, \"tasks\": %d}", measurePoolOverhead(threads: threads, tasks: tasks) * 1e9, threads, tasks))
        }
    }
    exit(0)
}

let peakPerCore = measurePeakPerCore()
let int8PeakPerCore = !int8KernelsAccelerated ? 0 : KernelDispatch.usesVNNI ? measureInt8PeakPerCore() : measureInt8PeakAVX2()
if int8KernelsAccelerated {
    FileHandle.standardError.write("measured single-core int8 peak: \(String(format: "%.1f", int8PeakPerCore)) GOP/s\n".data(using: .utf8)!)
}
FileHandle.standardError.write("measured single-core peak: \(String(format: "%.1f", peakPerCore)) GFLOP/s (kernels: \(KernelDispatch.isa), CPU: \(CPUFeatures.current))\n".data(using: .utf8)!)

/// Loaded models by (path, threads) and the inputs and warm state per batch, so `--serve` requests
/// reuse them.
var loaded: [String: CompiledModel] = [:]
var warmed: Set<String> = []

/// One measurement as a JSON line: runs for at least `seconds` (and 5 runs), median. The first one
/// for a model, thread count and batch warms up first (which covers the batch-splitting trials);
/// later ones (`--serve`) run once untimed, as the other engine may have run in between.
func measure(path: String, threads: Int, batch: Int, seconds: Double) -> String? {
    let key = "\(threads) \(path)"
    let model: CompiledModel
    if let m = loaded[key] {
        model = m
    } else {
        do {
            model = try ONNXLoader.load(path: path, options: EngineOptions(threads: threads, widenFixedBatch: widen, batchSplitting: splitting))
        } catch {
            return "{\"model\": \"\(path)\", \"error\": \"\(error)\"}"
        }
        loaded[key] = model
        for note in model.loadNotes {
            FileHandle.standardError.write("\((path as NSString).lastPathComponent): \(note)\n".data(using: .utf8)!)
        }
    }
    if model.inputs[0].shape.first != -1 && batch != 1 { return nil }
    var rng = SystemRandomNumberGenerator()
    let inputs = model.inputs.map { spec -> Tensor in
        let shape = spec.shape.map { $0 < 0 ? batch : $0 }
        let n = shape.reduce(1, *)
        let values = (0..<n).map { _ in Float.random(in: -1...1, using: &rng) }
        let t = Tensor(shape: Shape(shape), floats: values)
        if spec.dtype == .float16 {
            let h = Tensor(shape: Shape(shape), dtype: .float16)
            let p = h.rawPointer.assumingMemoryBound(to: UInt16.self)
            for i in 0..<n { p[i] = Float16(values[i]).bitPattern }
            return h
        }
        return t
    }
    do {
        let warm = "\(key) \(batch)"
        let untimed = warmed.contains(warm) ? 1 : max(3, CompiledModel.batchSplitTrialRuns + 1)
        warmed.insert(warm)
        for _ in 0..<untimed { _ = try model.run(inputs) }
        // Batch splitting's trial goes on while the two ways time close: warm up until it has decided.
        var extra = 0
        while batch > 1, model.splitsBatches(of: batch, threads: threads) == nil, extra <= CompiledModel.batchSplitMaxTrialRuns {
            _ = try model.run(inputs)
            extra += 1
        }
        var times: [Double] = []
        let start = now()
        while (now() - start < seconds || times.count < 5) && times.count < 2000 {
            let t0 = now()
            _ = try model.run(inputs)
            times.append(now() - t0)
        }
        times.sort()
        let median = times[times.count / 2]
        let gflops = Double(model.flopsPerImage * batch) / median / 1e9
        let int8 = model.int8Operators > 0 && int8PeakPerCore > 0
        let pct = gflops / ((int8 ? int8PeakPerCore : peakPerCore) * Double(threads)) * 100
        let split = model.splitsBatches(of: batch, threads: threads).map { $0 ? "split" : "whole" } ?? "-"
        return String(format: "{\"model\": \"%@\", \"batch\": %d, \"threads\": %d, \"median_ms\": %.3f, \"img_s\": %.1f, \"gflops\": %.1f, \"pct_peak\": %.1f, \"runs\": %d, \"split\": \"%@\", \"peak\": \"%@\", \"isa\": \"%@\"}",
                      (path as NSString).lastPathComponent, batch, threads, median * 1000, Double(batch) / median,
                      gflops, pct, times.count, split, int8 ? "int8" : "fp32", KernelDispatch.isa.rawValue)
    } catch {
        return "{\"model\": \"\(path)\", \"error\": \"\(error)\"}"
    }
}

if serve {
    // One request per line, "THREADS BATCH SECONDS MODEL.onnx"; one JSON line back per request
    // ("{}" where the model does not take that batch).
    while let line = readLine() {
        let parts = line.split(separator: " ", maxSplits: 3).map(String.init)
        guard parts.count == 4, let t = Int(parts[0]), let b = Int(parts[1]), let s = Double(parts[2]) else {
            print("{\"error\": \"bad request\"}")
            fflush(stdout)
            continue
        }
        print(measure(path: parts[3], threads: t, batch: b, seconds: s) ?? "{}")
        fflush(stdout)
    }
} else {
    for path in models {
        for threads in threadCounts {
            for batch in batches {
                if let line = measure(path: path, threads: threads, batch: batch, seconds: seconds) {
                    print(line)
                    fflush(stdout)
                }
            }
            loaded["\(threads) \(path)"] = nil
        }
    }
}
