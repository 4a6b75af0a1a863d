// glimpse-image-bench: decode+preprocess throughput of GlimpseImage on one thread, and a `dump`
// mode that writes the preprocessed tensor (raw little-endian float32) for comparisons with Pillow.
//
//   glimpse-image-bench bench <seconds> <file>...     prints "<file> <img/s>" per file
//   glimpse-image-bench dump <out.f32> <file> [center|fit|fill] [rgb|bgr|gray] [short]
// Environment: GLIMPSE_DCT=eighths|powersOfTwo|off (DCT scaling policy, default powersOfTwo).
import Foundation
import GlimpseImage

func readFile(_ path: String) -> Data {
    guard let d = FileManager.default.contents(atPath: path) else {
        FileHandle.standardError.write("cannot read \(path)\n".data(using: .utf8)!)
        exit(2)
    }
    return d
}

let env = ProcessInfo.processInfo.environment
let options = DecodeOptions(dctScaling: env["GLIMPSE_DCT"].flatMap(DCTScaling.init(rawValue:)) ?? .powersOfTwo)
let torch = Preprocessing(width: 224, height: 224, resizeShortSide: 256, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225])
let args = CommandLine.arguments
guard args.count >= 3 else {
    print("usage: glimpse-image-bench bench <seconds> <file>... | dump <out.f32> <file> [mode] [order] [short]")
    exit(2)
}
switch args[1] {
case "bench":
    let seconds = Double(args[2]) ?? 3
    for path in args.dropFirst(3) {
        let data = readFile(path)
        var out = [Float](repeating: 0, count: torch.elementCount)
        var n = 0
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed = 0.0
        while elapsed < seconds {
            for _ in 0..<8 {
                data.withUnsafeBytes { raw in
                    out.withUnsafeMutableBytes { dst in
                        _ = try? ImagePipeline.preprocess(raw, spec: torch, options: options, into: dst.baseAddress!)
                    }
                }
                n += 1
            }
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        }
        print("\(path) \(Double(n) / elapsed)")
    }
case "dump":
    var spec = torch
    if args.count > 4, let m = CropMode(rawValue: args[4]) { spec.crop = m }
    if args.count > 5, let o = ChannelOrder(rawValue: args[5]) { spec.channelOrder = o }
    if args.count > 6 { spec.resizeShortSide = Int(args[6]).flatMap { $0 > 0 ? $0 : nil } }
    if spec.channelOrder == .gray { spec.mean = [0]; spec.std = [1] }
    let data = readFile(args[3])
    var out = [Float](repeating: 0, count: spec.elementCount)
    do {
        let info = try data.withUnsafeBytes { raw in
            try out.withUnsafeMutableBytes { try ImagePipeline.preprocess(raw, spec: spec, options: options, into: $0.baseAddress!) }
        }
        print(info)
        try out.withUnsafeBytes { Data($0) }.write(to: URL(fileURLWithPath: args[2]))
    } catch {
        print("error: \(error)")
        exit(1)
    }
default:
    print("unknown command \(args[1])")
    exit(2)
}
