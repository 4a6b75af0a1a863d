/// Scalar reference GEMM: C[m, n] = epilogue(Σ_k A[m, k]·B[k, n]) with row-major A (lda) and B (ldb).
public func f32_gemm_reference(
    m: Int, n: Int, k: Int, a: UnsafePointer<Float>, lda: Int, b: UnsafePointer<Float>, ldb: Int,
    c: UnsafeMutablePointer<Float>, ldc: Int, epilogue: GemmEpilogue = .none
) {
    for i in 0..<m {
        for j in 0..<n {
            var acc: Double = 0
            for kk in 0..<k { acc += Double(a[i * lda + kk]) * Double(b[kk * ldb + j]) }
            c[i * ldc + j] = epilogue.apply(Float(acc), row: i, col: j)
        }
    }
}
