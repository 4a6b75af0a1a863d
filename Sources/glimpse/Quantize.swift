import ArgumentParser
import Foundation
import GlimpseImage
import GlimpseModelTools
import GlimpseQuantize
import GlimpseServing
import GlimpseTensor

struct Quantize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write an fp16, int8 or calibrated int8-static variant of a float32 ONNX model and compare it with the original.",
        discussion: """
        An encrypted model (MODEL.onnx.enc, with --model-key-file) is decrypted in memory and the variant \
        is written encrypted with the same key, so no plaintext model reaches the disk.

        Modes: fp16 (float16 weights + Cast), int8-linear (symmetric per-channel int8 weights as \
        DequantizeLinear), int8-kmeans (2^bits shared values per tensor on weights scaled per output \
        channel, as Gather(table, indices) times the channel scales). Biases and tensors under 1024 \
        elements stay float32. The variant runs in any ONNX runtime; Glimpse folds the weights back \
        to float32 at load. With --images, both models classify every JPEG/PNG of the folder and a \
        table reports size, top-1 agreement, softmax and relative logit differences, load time and \
        batch-1 latency.

        int8-static writes a QDQ model: int8 weights per output channel, int32 biases, and uint8 \
        activations per tensor (QuantizeLinear/DequantizeLinear pairs around every Conv, Gemm and \
        MatMul) whose ranges come from running the float32 model on Glimpse's engine over the \
        calibration images given with --images: a folder of JPEG/PNG files, or a labelled data set as \
        `glimpse eval` reads it (IDX file, tar archive, labelled folder), of which \
        --calibration-images are taken at even strides. --calibration minmax (the default) uses the \
        full observed range; percentile clips each end at --percentile.
        """)

    @Argument(help: "The float32 .onnx model.") var model: String
    @Option(help: "fp16, int8-linear, int8-kmeans or int8-static.") var mode: String
    @Option(help: "Bits per weight for int8-kmeans (1...8): 2^bits centroids per tensor.") var bits: Int = 8
    @Option(help: "Folder of JPEG/PNG photos to compare the two models on; for int8-static also the calibration images (or an IDX file / tar archive / labelled folder).")
    var images: String?
    @Option(help: "Preprocessing: a preset (\(PreprocessingPreset.names.joined(separator: ", "))) or the name of a model in --models, whose preprocessing is used.")
    var preprocessing: String = "imagenet"
    @Option(help: "Model folder where --preprocessing names a model.") var models: String = ModelOptions.defaultFolder
    @Option(help: "int8-static: activation ranges by minmax or percentile.") var calibration: String = "minmax"
    @Option(help: "int8-static with --calibration percentile: the percentile kept at each end.")
    var percentile: Double = CalibrationMethod.defaultPercentile
    @Option(help: "int8-static: calibrate on at most this many images, spread evenly over the data.")
    var calibrationImages: Int = 1000
    @Flag(help: "int8-static: inputs of a Concat of Relu'd conv outputs take the Concat's scale, so int8 engines concatenate bytes (coarser steps for the narrower inputs).")
    var concatSharedScale = false
    @Option(help: "Output file (default: <model>-<mode>.onnx in the current folder).") var out: String?
    @Option(help: "Engine threads for the comparison.") var threads: Int = 1
    @Option(help: "k-means starting centroids: linear, quantile or mixed.") var kmeansInit: String = KMeansInitialization.mixed.rawValue
    @Flag(inversion: .prefixedNo, help: "k-means on weights divided by their output channel's max |w| (a per-channel Mul restores them).")
    var kmeansChannelScales = true
    @OptionGroup var keys: ModelKeyOptions

    func run() throws {
        let quantizationMode: QuantizationMode
        do {
            quantizationMode = try QuantizationMode(name: mode, bits: bits)
        } catch let e as QuantizationError {
            throw ValidationError(e.message)
        }
        let spec = try preprocessingSpec()
        if EncryptedModelFile.isEncrypted(model) {
            try runEncrypted(mode: quantizationMode, spec: spec)
            return
        }
        let stem = ((model as NSString).lastPathComponent as NSString).deletingPathExtension
        let output = out ?? "\(stem)-\(quantizationMode.fileSuffix).onnx"
        guard (output as NSString).standardizingPath != (model as NSString).standardizingPath else {
            throw ValidationError("--out must differ from the input model")
        }
        guard let initialization = KMeansInitialization(rawValue: kmeansInit) else {
            throw ValidationError("--kmeans-init must be linear, quantile or mixed")
        }
        if quantizationMode == .int8Static {
            try runStatic(output: output, spec: spec)
            return
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

    /// A preset, or the preprocessing of a model in `--models`.
    func preprocessingSpec() throws -> Preprocessing {
        if let spec = PreprocessingPreset.named(preprocessing) { return spec }
        let (found, _) = ModelDirectory.scan(models)
        if let m = found.first(where: { $0.name == preprocessing }) { return m.preprocessing }
        throw ValidationError("--preprocessing \"\(preprocessing)\" is neither a preset (\(PreprocessingPreset.names.joined(separator: ", "))) nor a model in \(models)")
    }

    func runStatic(output: String, spec: Preprocessing) throws {
        guard let images else { throw ValidationError("int8-static needs calibration images: --images DIR (or an IDX file or tar archive)") }
        guard calibrationImages >= 1 else { throw ValidationError("--calibration-images must be at least 1") }
        let method: CalibrationMethod
        do {
            method = try CalibrationMethod(name: calibration, percentile: percentile)
        } catch let e as QuantizationError {
            throw ValidationError(e.message)
        }
        let (inputs, skipped, plainFolder) = try calibrationInputs(images, spec: spec) {
            try StaticQuantizer.calibrationInputs(folder: images, modelPath: model, preprocessing: spec, limit: calibrationImages)
        }
        guard !inputs.isEmpty else { throw ValidationError("no usable calibration images in \(images)") }
        let start = Date()
        let (result, summary) = try StaticQuantizer.quantizeFile(at: model, to: output, calibration: inputs, method: method,
                                                                   concatSharesOutput: concatSharedScale, threads: threads)
        print("wrote \(output): \(result.bytes.count) bytes, \(result.tensors.count) weight tensors (\(result.quantizedElements) values) int8 per output channel, "
              + "\(summary.biases) biases int32, \(summary.activations) activation tensors uint8 (\(summary.calibrated) calibrated, "
              + "\(summary.droppedRelus) Relu folded), \(result.keptFloatElements) values kept float32")
        print(String(format: "calibration: %@ on %ld images in %.1f s", method.description, inputs.count, Date().timeIntervalSince(start)))
        if !skipped.isEmpty { print("skipped \(skipped.count) calibration files, e.g. \(skipped[0])") }
        guard plainFolder else { return }
        let report = try QuantizationReport.measure(reference: model, variant: output, mode: "int8-static (\(method))",
                                                    imagesDirectory: images, preprocessing: spec, threads: threads)
        print("")
        print(QuantizationReport.table([report]))
        print("\(report.imageCount) images (also the calibration images), preprocessing \(preprocessing), \(threads) engine thread(s)")
        for d in report.disagreements { print("top-1 differs: \(d)") }
    }

    /// Calibration inputs from `images`: a plain folder of photos (read by `fromFolder`; the third
    /// value is then true), else a labelled data set as `glimpse eval` reads it.
    func calibrationInputs(_ images: String, spec: Preprocessing,
                           fromFolder: () throws -> (inputs: [Tensor], skipped: [String])) throws -> ([Tensor], [String], Bool) {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: images, isDirectory: &isDir) else {
            throw ValidationError("no such file or folder: \(images)")
        }
        if isDir.boolValue {
            let (inputs, skipped) = try fromFolder()
            if !inputs.isEmpty { return (inputs, skipped, true) }
        }
        var inputs: [Tensor] = [], skipped: [String] = []
        let (_, samples) = try EvalDataset.load(images)
        let dims = spec.layout == .nhwc ? [1, spec.height, spec.width, spec.channels] : [1, spec.channels, spec.height, spec.width]
        for sample in StaticQuantizer.spread(samples, limit: calibrationImages) {
            let t = Tensor(shape: Shape(dims), dtype: spec.dtype)
            do {
                try Evaluator.preprocess(sample, spec: spec, into: t.rawPointer)
                inputs.append(t)
            } catch {
                skipped.append("\(sample.source): \(error)")
            }
        }
        return (inputs, skipped, false)
    }
}
