/// Scalar reference of a grouped 2-D convolution over one NCHW image.
/// weights: [Cout, Cin/groups, KH, KW]; `geometry.inChannels` is the channels per group.
public func f32_conv2d_reference(
    input: UnsafePointer<Float>, weights: UnsafePointer<Float>, bias: UnsafePointer<Float>?,
    output: UnsafeMutablePointer<Float>, geometry g: ConvGeometry, groups: Int, outChannelsPerGroup: Int,
    lowerBound: Float = -.infinity, upperBound: Float = .infinity
) {
    for grp in 0..<groups {
        for oc in 0..<outChannelsPerGroup {
            let co = grp * outChannelsPerGroup + oc
            for oh in 0..<g.outHeight {
                for ow in 0..<g.outWidth {
                    var acc: Double = bias.map { Double($0[co]) } ?? 0
                    for ci in 0..<g.inChannels {
                        let plane = input + (grp * g.inChannels + ci) * g.inPixels
                        for kh in 0..<g.kernelHeight {
                            let ih = oh * g.strideH - g.padTop + kh * g.dilationH
                            guard ih >= 0 && ih < g.inHeight else { continue }
                            for kw in 0..<g.kernelWidth {
                                let iw = ow * g.strideW - g.padLeft + kw * g.dilationW
                                guard iw >= 0 && iw < g.inWidth else { continue }
                                let w = weights[((co * g.inChannels + ci) * g.kernelHeight + kh) * g.kernelWidth + kw]
                                acc += Double(w) * Double(plane[ih * g.inWidth + iw])
                            }
                        }
                    }
                    let v = Float(acc)
                    output[(co * g.outHeight + oh) * g.outWidth + ow] = min(max(v, lowerBound), upperBound)
                }
            }
        }
    }
}
