import GlimpseEngine
import GlimpseKernels
import GlimpseTensor

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
                f32_conv2d_reference(input: x + item * image, weights: w, bias: b, output: y + item * outImage, geometry: g,
                                     groups: 1, outChannelsPerGroup: outChannels, lowerBound: lower, upperBound: upper)
            }
        }
    } } }
    return out
}
