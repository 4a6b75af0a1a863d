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
