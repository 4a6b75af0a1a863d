import ArgumentParser
import Foundation
import GlimpseQuantize
import GlimpseServing

struct Quantize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write an fp16 or int8 variant of a float32 ONNX model and compare it with the original.",
        discussion: """
        Modes: fp16 (float16 weights + Cast), int8-linear (symmetric per-channel int8 weights as \
        DequantizeLinear), int8-kmeans (2^bits shared values per tensor on weights scaled per output \
        channel, as Gather(table, indices) times the channel scales). Biases and tensors under 1024 \
        elements stay float32. The variant runs in any ONNX runtime; Glimpse folds the weights back \
        to float32 at load. With --images, both models classify every JPEG/PNG of the folder and a \
        table reports size, top-1 agreement, softmax and relative logit differences, load time and \
        batch-1 latency.
        """)

    @Argument(help: "The float32 .onnx model.") var model: String
    @Option(help: "fp16, int8-linear or int8-kmeans.") var mode: String
    @Option(help: "Bits per weight for int8-kmeans (1...8): 2^bits centroids per tensor.") var bits: Int = 8
    @Option(help: "Folder of JPEG/PNG photos to compare the two models on.") var images: String?
    @Option(help: "Preprocessing preset of the model (\(PreprocessingPreset.names.joined(separator: ", "))).")
    var preprocessing: String = "imagenet"
    @Option(help: "Output file (default: <model>-<mode>.onnx in the current folder).") var out: String?
    @Option(help: "Engine threads for the comparison.") var threads: Int = 1
    @Option(help: "k-means starting centroids: linear, quantile or mixed.") var kmeansInit: String = KMeansInitialization.mixed.rawValue
    @Flag(inversion: .prefixedNo, help: "k-means on weights divided by their output channel's max |w| (a per-channel Mul restores them).")
    var kmeansChannelScales = true

    func run() throws {
        let quantizationMode: QuantizationMode
        do {
            quantizationMode = try QuantizationMode(name: mode, bits: bits)
        } catch let e as QuantizationError {
            throw ValidationError(e.message)
        }
        guard let spec = PreprocessingPreset.named(preprocessing) else {
            throw ValidationError("unknown preprocessing preset \"\(preprocessing)\" (known: \(PreprocessingPreset.names.joined(separator: ", ")))")
        }
        let stem = ((model as NSString).lastPathComponent as NSString).deletingPathExtension
        let output = out ?? "\(stem)-\(quantizationMode.fileSuffix).onnx"
        guard (output as NSString).standardizingPath != (model as NSString).standardizingPath else {
            throw ValidationError("--out must differ from the input model")
        }
        guard let initialization = KMeansInitialization(rawValue: kmeansInit) else {
            throw ValidationError("--kmeans-init must be linear, quantile or mixed")
        }
        let result = try ModelQuantizer.quantizeFile(at: model, to: output, mode: quantizationMode,
                                                     options: QuantizationOptions(kmeansInitialization: initialization,
                                                                                  kmeansChannelScales: kmeansChannelScales))
        print("wrote \(output): \(result.bytes.count) bytes, \(result.tensors.count) weight tensors (\(result.quantizedElements) values) as \(quantizationMode), \(result.keptFloatElements) values kept float32")
        if result.tensors.isEmpty {
            print("note: nothing was quantized; the model has no float32 weights of at least 1024 values\(quantizationMode == .fp16 ? "" : " read as Conv/Gemm/MatMul weights")")
        }
        let worst = result.tensors.max { $0.maxAbsError < $1.maxAbsError }
        if let worst {
            print(String(format: "largest weight error: %.3e in %@ (rms %.3e)", worst.maxAbsError, worst.name, worst.rmsError))
        }
        guard let images else { return }
        let report = try QuantizationReport.measure(reference: model, variant: output, mode: quantizationMode.description,
                                                    imagesDirectory: images, preprocessing: spec, threads: threads)
        print("")
        print(QuantizationReport.table([report]))
        print("\(report.imageCount) images, preprocessing \(preprocessing), \(threads) engine thread(s)")
        for s in report.skipped { print("skipped \(s)") }
        for d in report.disagreements { print("top-1 differs: \(d)") }
    }
}
