// Glimpse engine benchmark runner (no test framework, no server dependencies).
//
// Usage: bench-engine [--iterations-seconds S] [--batches 1,8,32] [--threads 1,2] MODEL.onnx...
// Prints one JSON object per line: model, batch, threads, median_ms, img_s, gflops, pct_peak.
import Foundation
import GlimpseEngine
import GlimpseONNX
import GlimpseTensor

var batches = [1, 8, 32]
var threadCounts = [1, 2]
var seconds = 2.0
var models: [String] = []
var args = CommandLine.arguments.dropFirst()
while let a = args.first {
    args = args.dropFirst()
    switch a {
    case "--batches": batches = (args.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
    case "--threads": threadCounts = (args.popFirst() ?? "").split(separator: ",").compactMap { Int($0) }
    case "--seconds": seconds = Double(args.popFirst() ?? "") ?? seconds
    default: models.append(a)
    }
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

let peakPerCore = 117.0  // GFLOP/s, Zen 4 at 3.67 GHz (BENCHMARKING.md)

for path in models {
    for threads in threadCounts {
        let model: CompiledModel
        do {
            model = try ONNXLoader.load(path: path, options: EngineOptions(threads: threads))
        } catch {
            print("{\"model\": \"\(path)\", \"error\": \"\(error)\"}")
            continue
        }
        for batch in batches {
            if model.inputs[0].shape.first != -1 && batch != 1 { continue }
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
                for _ in 0..<3 { _ = try model.run(inputs) }
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
                let pct = gflops / (peakPerCore * Double(threads)) * 100
                print(String(format: "{\"model\": \"%@\", \"batch\": %d, \"threads\": %d, \"median_ms\": %.3f, \"img_s\": %.1f, \"gflops\": %.1f, \"pct_peak\": %.1f, \"runs\": %d}",
                             (path as NSString).lastPathComponent, batch, threads, median * 1000, Double(batch) / median,
                             gflops, pct, times.count))
                fflush(stdout)
            } catch {
                print("{\"model\": \"\(path)\", \"error\": \"\(error)\"}")
            }
        }
    }
}
