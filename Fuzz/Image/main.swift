import CLibFuzzer
import Foundation
import GlimpseImage

/// Small limits, so one input cannot take the harness's memory (the server's defaults are larger).
private let limits = ImageLimits(maxEncodedBytes: 1 << 20, maxPixels: 4_000_000)
private let specs: [Preprocessing] = [
    Preprocessing(width: 224, height: 224, resizeShortSide: 256, crop: .center),
    Preprocessing(width: 28, height: 28, crop: .fit, channelOrder: .gray, invert: true),
    Preprocessing(width: 32, height: 24, crop: .fill, channelOrder: .bgr, layout: .nhwc, dtype: .float16),
]
private let output = UnsafeMutableRawPointer.allocate(byteCount: specs.map(\.byteCount).max()!, alignment: 64)

/// Encoded bytes (JPEG or PNG) through the whole pipeline: decode, EXIF orientation, crop, resize,
/// normalize. The input's length picks the model input, crop mode, layout and DCT scaling, so the seeds
/// (real images) keep their bytes. Either an `ImageInfo` within the limits or an `ImageError`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let spec = specs[size % specs.count]
    let options = DecodeOptions(dctScaling: DCTScaling.allCases[(size / specs.count) % DCTScaling.allCases.count])
    do {
        let info = try ImagePipeline.preprocess(UnsafeRawBufferPointer(start: data, count: size), spec: spec,
                                                limits: limits, options: options, into: output)
        precondition(info.width > 0 && info.height > 0 && info.width * info.height <= limits.maxPixels,
                     "\(info.width)x\(info.height) past the limit")
        precondition((1...8).contains(info.orientation), "orientation \(info.orientation)")
    } catch is ImageError {
    } catch {
        preconditionFailure("unexpected error type \(error)")
    }
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzz(data!, size) })
