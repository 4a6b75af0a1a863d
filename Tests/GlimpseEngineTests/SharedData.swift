import Foundation
import GlimpseEngine
import GlimpseKernels
import GlimpseTensor
import XCTest

/// Locates the shared test data at `../shared` beside the repository root.
enum SharedData {
    /// Repository root: three levels up from Tests/GlimpseEngineTests/<file>.
    static var root: URL {
        URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared")
    }

    static func path(_ relative: String) throws -> String {
        let url = root.appendingPathComponent(relative)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw SharedDataMissing(path: url.path)
        }
        return url.path
    }

    static func bytes(_ relative: String) throws -> [UInt8] {
        let p = try path(relative)
        guard let data = FileManager.default.contents(atPath: p) else { throw EngineError("cannot read \(p)") }
        return [UInt8](data)
    }

    static func npy(_ relative: String) throws -> Tensor { try NPY.decode(bytes(relative)) }
}

/// The scalar reference convolution (ungrouped, bias, clamped to `lower...upper`) of a batch of
/// `batch` NCHW images, for the engine-level convolution tests.
func referenceConvolution(_ input: [Float], weights: [Float], bias: [Float], geometry g: ConvGeometry, outChannels: Int,
                          batch: Int, lower: Float = -.infinity, upper: Float = .infinity) -> [Float] {
    let image = g.inChannels * g.inPixels, outImage = outChannels * g.outPixels
    var out = [Float](repeating: 0, count: batch * outImage)
    input.withUnsafeBufferPointer { x in weights.withUnsafeBufferPointer { w in bias.withUnsafeBufferPointer { b in
        out.withUnsafeMutableBufferPointer { y in
            guard let x = x.baseAddress, let w = w.baseAddress, let b = b.baseAddress, let y = y.baseAddress else { return }
            for item in 0..<batch {
                conv2d_f32_reference(input: x + item * image, weights: w, bias: b, output: y + item * outImage, geometry: g,
                                     groups: 1, outChannelsPerGroup: outChannels, lowerBound: lower, upperBound: upper)
            }
        }
    } } }
    return out
}

/// max |a − b| / max |b|: the relative error used for parity checks.
func relativeError(_ a: [Float], _ b: [Float]) -> Float {
    precondition(a.count == b.count, "size mismatch \(a.count) vs \(b.count)")
    var diff: Float = 0, scale: Float = 0
    for i in a.indices {
        diff = max(diff, abs(a[i] - b[i]))
        scale = max(scale, abs(b[i]))
    }
    return scale > 0 ? diff / scale : diff
}

func argmax(_ v: ArraySlice<Float>) -> Int {
    var best = v.startIndex
    for i in v.indices where v[i] > v[best] { best = i }
    return best - v.startIndex
}

struct SharedDataMissing: Error, CustomStringConvertible {
    let path: String
    var description: String { "shared test data missing: \(path) (expected ../shared beside the repository)" }
}

/// `items` distinct pseudo-random 3 × 224 × 224 images in one batch tensor, and each one's output
/// from a batch-1 run of `model` (for comparing batched runs with single ones).
func imageBatchAndSingleRuns(_ model: CompiledModel, items: Int) throws -> (batch: Tensor, singles: [[Float]]) {
    let input = Tensor(shape: [items, 3, 224, 224], dtype: .float32)
    for i in 0..<input.count { input.f32[i] = Float((i * 7919) % 1000) / 500 - 1 }
    let singles: [[Float]] = try (0..<items).map { item in
        let one = Tensor(shape: [1, 3, 224, 224], dtype: .float32)
        one.rawPointer.copyMemory(from: input.item(item).rawPointer, byteCount: one.byteCount)
        return try model.run([one])[0].floats()
    }
    return (input, singles)
}
