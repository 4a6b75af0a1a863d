/// Lane-wise min/max/clamp that lower to single vector compare+blend instructions.
///
/// The standard library's `pointwiseMin`/`pointwiseMax`/`clamp` follow IEEE minNum/maxNum NaN rules
/// and are scalarized on x86; these treat NaN like any other value (as the hardware instructions do).
@_transparent
public func simdMax(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> {
    a.replacing(with: b, where: a .< b)
}

@_transparent
public func simdMin(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> {
    a.replacing(with: b, where: b .< a)
}

@_transparent
public func simdClamp(_ v: SIMD16<Float>, _ lower: SIMD16<Float>, _ upper: SIMD16<Float>) -> SIMD16<Float> {
    simdMin(simdMax(v, lower), upper)
}
