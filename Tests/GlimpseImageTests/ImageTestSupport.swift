import XCTest
@testable import GlimpseImage

/// The torchvision / ImageNet preprocessing used by the reference predictions.
let torchSpec = Preprocessing(width: 224, height: 224, resizeShortSide: 256,
                              mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225])

/// Runs the pipeline into a fresh float32 buffer.
func preprocess(_ data: Data, spec: Preprocessing = torchSpec, crop: CropMode? = nil, limits: ImageLimits = .init(),
                options: DecodeOptions = .init()) throws -> (values: [Float], info: ImageInfo) {
    var out = [Float](repeating: .nan, count: spec.elementCount)
    let info = try data.withUnsafeBytes { raw in
        try out.withUnsafeMutableBytes { dst in
            try ImagePipeline.preprocess(raw, spec: spec, crop: crop, limits: limits, options: options, into: dst.baseAddress!)
        }
    }
    return (out, info)
}

/// Raw half-precision output, as bit patterns.
func preprocess16(_ data: Data, spec: Preprocessing) throws -> [Float] {
    var out = [UInt16](repeating: 0, count: spec.elementCount)
    _ = try data.withUnsafeBytes { raw in
        try out.withUnsafeMutableBytes { try ImagePipeline.preprocess(raw, spec: spec, into: $0.baseAddress!) }
    }
    return out.map { Float(Float16(bitPattern: $0)) }
}

func meanAbsDiff(_ a: [Float], _ b: [Float]) -> Float {
    precondition(a.count == b.count)
    var s: Float = 0
    for i in a.indices { s += abs(a[i] - b[i]) }
    return s / Float(max(a.count, 1))
}

/// Asserts that `body` throws an ImageError of `kind` whose message contains every fragment.
func assertImageError<T>(_ kind: ImageError.Kind, _ fragments: [String] = [], file: StaticString = #filePath, line: UInt = #line,
                         _ body: () throws -> T) {
    do {
        _ = try body()
        XCTFail("expected \(kind.rawValue) error, but it succeeded", file: file, line: line)
    } catch let e as ImageError {
        XCTAssertEqual(e.kind, kind, "message: \(e.message)", file: file, line: line)
        for f in fragments {
            XCTAssertTrue(e.message.contains(f), "'\(e.message)' lacks '\(f)'", file: file, line: line)
        }
    } catch {
        XCTFail("expected ImageError, got \(error)", file: file, line: line)
    }
}
