import GlimpseEngine
import GlimpseONNX
import GlimpseTensor

/// The range a tensor is quantized over, from calibration.
struct ActivationRange: Sendable, Hashable {
    var lower: Float
    var upper: Float
    /// Smallest and largest value seen, before a calibration method clipped them.
    var observedLower: Float
    var observedUpper: Float
}

/// Runs the float32 model on Glimpse's engine over calibration inputs and records the values of
/// chosen tensors, as onnxruntime's calibrators do: the graph is imported with those tensors added
/// as graph outputs (the optimizer then keeps them, fusing around them), compiled and run one input
/// at a time. `minMax` needs one pass; `percentile` a second one, filling a histogram per tensor over
/// the first pass's range.
enum ActivationCalibrator {
    static let histogramBins = 2048

    /// Where a calibrated tensor is read from: the model input itself, or a (possibly added) graph output.
    enum Source { case input, output(Int) }

    /// The float32 model compiled with the tensors to calibrate as outputs, and where each is read.
    struct Instrumented {
        var model: CompiledModel
        var sources: [(name: String, source: Source)]
        var name: String

        /// Runs the model on each input and calls `body` with each calibrated tensor's index and values.
        func forEachValue(_ inputs: [Tensor], _ body: (Int, UnsafeBufferPointer<Float>) -> Void) throws {
            for input in inputs {
                let outputs: [Tensor]
                do {
                    outputs = try model.run([input])
                } catch {
                    throw QuantizationError(.verificationFailed, "\(name): calibration run failed: \(error)")
                }
                for (k, s) in sources.enumerated() {
                    let t: Tensor
                    switch s.source {
                    case .input: t = input
                    case .output(let o): t = outputs[o]
                    }
                    guard t.dtype == .float32 else { continue }
                    body(k, UnsafeBufferPointer(start: t.f32, count: t.count))
                }
            }
        }
    }

    static func ranges(of tensorNames: [String], model bytes: [UInt8], name: String, inputs: [Tensor],
                       method: CalibrationMethod, threads: Int) throws -> [String: ActivationRange] {
        guard !inputs.isEmpty else { throw QuantizationError(.invalidArgument, "\(name): no calibration inputs") }
        let instrumented = try instrument(bytes, name: name, outputs: tensorNames, threads: threads)
        let sources = instrumented.sources

        var lower = [Float](repeating: .infinity, count: sources.count)
        var upper = [Float](repeating: -.infinity, count: sources.count)
        try instrumented.forEachValue(inputs) { k, values in
            var lo = lower[k], hi = upper[k]
            for v in values where v.isFinite {
                lo = min(lo, v)
                hi = max(hi, v)
            }
            lower[k] = lo
            upper[k] = hi
        }
        for k in sources.indices where lower[k] > upper[k] {
            throw QuantizationError(.verificationFailed, "\(name): tensor '\(sources[k].name)' had no finite values on the calibration inputs")
        }
        var clipped = zip(lower, upper).map { ($0, $1) }
        if case .percentile(let p) = method, p < 100 {
            clipped = try percentileRanges(instrumented, inputs: inputs, lower: lower, upper: upper, percentile: p)
        }

        var out: [String: ActivationRange] = [:]
        for (k, s) in sources.enumerated() {
            out[s.name] = ActivationRange(lower: clipped[k].0, upper: clipped[k].1, observedLower: lower[k], observedUpper: upper[k])
        }
        return out
    }

    /// The model imported with `outputs` added as graph outputs (the optimizer then keeps them),
    /// optimized and compiled.
    static func instrument(_ bytes: [UInt8], name: String, outputs tensorNames: [String], threads: Int) throws -> Instrumented {
        let graph: Graph
        do {
            graph = try ONNXLoader.importGraph(bytes: bytes, name: name)
        } catch {
            throw QuantizationError(.verificationFailed, "\(name): the float32 model does not import in the engine: \(error)")
        }
        guard graph.inputs.count == 1 else {
            throw QuantizationError(.unsupportedModel, "\(name): calibration feeds one image tensor; the model has \(graph.inputs.count) inputs")
        }
        var ids: [String: Int] = [:]
        for (i, v) in graph.values.enumerated() where !v.name.isEmpty { ids[v.name] = i }
        let inputValue = graph.inputs[0].value

        var sources: [(name: String, source: Source)] = []
        for t in tensorNames {
            guard let v = ids[t], !graph.isConstant(v) else {
                throw QuantizationError(.unsupportedModel, "\(name): tensor '\(t)' is not computed at run time, so it cannot be calibrated")
            }
            if v == inputValue { sources.append((t, .input)); continue }
            if let k = graph.outputs.firstIndex(where: { $0.value == v }) {
                sources.append((t, .output(k)))
            } else {
                graph.outputs.append((v, .float32))
                sources.append((t, .output(graph.outputs.count - 1)))
            }
        }
        do {
            try GraphOptimizer.optimize(graph)
            let model = try CompiledModel(graph: graph, options: EngineOptions(threads: max(1, threads)))
            return Instrumented(model: model, sources: sources, name: name)
        } catch {
            throw QuantizationError(.verificationFailed, "\(name): the float32 model with its calibration outputs does not compile: \(error)")
        }
    }

    /// The second pass of `percentile`: a histogram per tensor over its observed range, clipped at
    /// `percentile` at each end.
    static func percentileRanges(_ instrumented: Instrumented, inputs: [Tensor], lower: [Float], upper: [Float],
                                 percentile p: Double) throws -> [(Float, Float)] {
        let bins = histogramBins
        var histograms = [[Int]](repeating: [Int](repeating: 0, count: bins), count: lower.count)
        try instrumented.forEachValue(inputs) { k, values in
            let lo = lower[k], width = (upper[k] - lower[k]) / Float(bins)
            guard width > 0 else { return }
            histograms[k].withUnsafeMutableBufferPointer { h in
                for v in values where v.isFinite {
                    h[min(bins - 1, max(0, Int((v - lo) / width)))] += 1
                }
            }
        }
        let tail = (100 - p) / 100
        var clipped = zip(lower, upper).map { ($0, $1) }
        for k in lower.indices {
            let width = (upper[k] - lower[k]) / Float(bins)
            guard width > 0 else { continue }
            let h = histograms[k]
            let total = h.reduce(0, +)
            let cut = Int((Double(total) * tail).rounded(.down))
            // Lower edge: the first bin where more than `cut` values have been seen; upper edge:
            // the last bin with more than `cut` values at or above it.
            var seen = 0, first = 0
            for b in 0..<bins {
                seen += h[b]
                if seen > cut { first = b; break }
            }
            seen = 0
            var last = bins - 1
            for b in stride(from: bins - 1, through: 0, by: -1) {
                seen += h[b]
                if seen > cut { last = b; break }
            }
            clipped[k] = (lower[k] + Float(first) * width, lower[k] + Float(last + 1) * width)
        }
        return clipped
    }
}
