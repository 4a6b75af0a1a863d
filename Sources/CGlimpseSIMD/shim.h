#ifndef GLIMPSE_SIMD_SHIM_H
#define GLIMPSE_SIMD_SHIM_H

// Intrinsic wrappers for the int8 kernels of GlimpseKernels. Plain Swift SIMD code does not select
// `vpdpbusd` (nor `vpmaddubsw` / `vpmaddwd`); these static inline functions are inlined into the
// Swift loops that call them, so the micro-kernels themselves stay in Swift.
//
// Each group exists only when the compiler targets the instruction set it needs (Package.swift
// passes the target CPU to the Clang importer with -Xcc -march=...), so the package builds for
// AVX2-only targets. Swift code selects the same path with `#if GLIMPSE_VNNI`.
//
// `__m512i` / `__m256i` arrive in Swift as SIMD8<Int64> / SIMD4<Int64>.

#include <immintrin.h>

#define GLIMPSE_INLINE static inline __attribute__((always_inline))

#if defined(__x86_64__)
#include <cpuid.h>
/// Instruction-set features of this CPU that the kernels can use, as `GLIMPSE_CPU_*` bits: cpuid
/// leaves 1 and 7, and XCR0 (`xgetbv`) for the register state the operating system saves, since a
/// CPU may list AVX or AVX-512 while the OS does not enable their registers.
#define GLIMPSE_CPU_AVX2 (1u << 0)        /* AVX2 + FMA + F16C, ymm state enabled */
#define GLIMPSE_CPU_AVX512F (1u << 1)     /* AVX-512 F, zmm and mask state enabled */
#define GLIMPSE_CPU_AVX512BW (1u << 2)    /* AVX-512 BW + DQ + VL */
#define GLIMPSE_CPU_AVX512VNNI (1u << 3)
#define GLIMPSE_CPU_AVX512VBMI (1u << 4)
#define GLIMPSE_CPU_AVXVNNI (1u << 5)     /* VEX-encoded VNNI (Alder Lake, Zen 5 without AVX-512) */
static inline unsigned glimpse_cpu_features(void) {
    unsigned a, b, c, d, out = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    int ymm = (lo & 0x6) == 0x6, zmm = (lo & 0xE6) == 0xE6;
    if (!ymm) return 0;
    unsigned a7, b7, c7, d7;
    if (!__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7)) return 0;
    if (((b7 >> 5) & 1) && fma && f16c) out |= GLIMPSE_CPU_AVX2;
    if (zmm && ((b7 >> 16) & 1)) out |= GLIMPSE_CPU_AVX512F;
    if ((out & GLIMPSE_CPU_AVX512F) && ((b7 >> 17) & 1) && ((b7 >> 30) & 1) && ((b7 >> 31) & 1)) out |= GLIMPSE_CPU_AVX512BW;
    if ((out & GLIMPSE_CPU_AVX512BW) && ((c7 >> 11) & 1)) out |= GLIMPSE_CPU_AVX512VNNI;
    if ((out & GLIMPSE_CPU_AVX512BW) && ((c7 >> 1) & 1)) out |= GLIMPSE_CPU_AVX512VBMI;
    unsigned a71, b71, c71, d71;
    if (a7 >= 1 && __get_cpuid_count(7, 1, &a71, &b71, &c71, &d71) && ((a71 >> 4) & 1) && (out & GLIMPSE_CPU_AVX2))
        out |= GLIMPSE_CPU_AVXVNNI;
    return out;
}
#else
static inline unsigned glimpse_cpu_features(void) { return 0; }
#endif

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define GLIMPSE_SIMD_HAS_VNNI512 1
/// vpdpbusd: each 32-bit lane of `acc` gains the sum of the four products of the unsigned bytes of
/// `u8` with the signed bytes of `s8` in that lane. Exact (no intermediate saturation).
GLIMPSE_INLINE __m512i glimpse_dpbusd_512(__m512i acc, __m512i u8, __m512i s8) {
    return _mm512_dpbusd_epi32(acc, u8, s8);
}
#endif

#if defined(__AVX512BW__)
#define GLIMPSE_SIMD_HAS_AVX512BW 1
/// Byte j of the result is byte idx[j] & 127 of the 128 bytes lo ++ hi (`vpermt2b`, AVX512-VBMI).
/// Targets with VNNI but without VBMI (Cascade Lake, Cooper Lake) get the same bytes from a loop.
GLIMPSE_INLINE __m512i glimpse_permute2_u8_512(__m512i lo, __m512i idx, __m512i hi) {
#if defined(__AVX512VBMI__)
    return _mm512_permutex2var_epi8(lo, idx, hi);
#else
    unsigned char src[128], ix[64], out[64];
    _mm512_storeu_si512((void *)src, lo);
    _mm512_storeu_si512((void *)(src + 64), hi);
    _mm512_storeu_si512((void *)ix, idx);
    for (int j = 0; j < 64; j++) out[j] = src[ix[j] & 127];
    return _mm512_loadu_si512((const void *)out);
#endif
}

/// Copies the first `count` (0...64) bytes from `src` to `dst`, touching no byte after them
/// (`vmovdqu8` with a mask, load and store).
GLIMPSE_INLINE void glimpse_copy_u8_first64(void *dst, const void *src, int count) {
    __mmask64 m = count >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << count) - 1);
    _mm512_mask_storeu_epi8(dst, m, _mm512_maskz_loadu_epi8(m, src));
}

/// Four vectors of sixteen int32 to 64 bytes in order (a's sixteen, then b's, c's, d's), with
/// saturation (signed to int16, then unsigned to uint8) and raised to at least `lower`. The packs
/// work within 128-bit lanes, so lane L of the packed vector holds four values of each of a, b, c, d;
/// one dword permutation puts them in order.
GLIMPSE_INLINE __m512i glimpse_pack4_i32_u8_512(__m512i a, __m512i b, __m512i c, __m512i d, unsigned char lower) {
    __m512i v = _mm512_packus_epi16(_mm512_packs_epi32(a, b), _mm512_packs_epi32(c, d));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_max_epu8(_mm512_permutexvar_epi32(order, v), _mm512_set1_epi8((char)lower));
}

/// Lane-wise minimum (`vminps`; where `v` is NaN the result is `upper`).
GLIMPSE_INLINE __m512 glimpse_min_f32_512(__m512 v, __m512 upper) { return _mm512_min_ps(v, upper); }

/// 64 bytes of a padded plane from one run of `count` (0...64) input bytes at `src`: byte j is
/// byte `pattern[j]` of the run where bit j of `interior` is set, `fill` elsewhere. Reads no byte
/// past the run (masked load) and writes all 64 bytes at `dst`.
GLIMPSE_INLINE void glimpse_expand_run_u8_64(void *dst, const void *src, int count, __m512i pattern,
                                             unsigned long long interior, unsigned char fill) {
    __mmask64 m = count >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << count) - 1);
    __m512i run = _mm512_maskz_loadu_epi8(m, src), pad = _mm512_set1_epi8((char)fill);
#if defined(__AVX512VBMI__)
    _mm512_storeu_si512(dst, _mm512_mask_permutexvar_epi8(pad, (__mmask64)interior, pattern, run));
#else
    unsigned char in[64], ix[64], out[64];
    _mm512_storeu_si512((void *)in, run);
    _mm512_storeu_si512((void *)ix, pattern);
    for (int j = 0; j < 64; j++) out[j] = (interior >> j) & 1 ? in[ix[j] & 63] : fill;
    _mm512_storeu_si512(dst, _mm512_loadu_si512((const void *)out));
    (void)pad;
#endif
}

/// Four bytes broadcast to all sixteen 32-bit lanes.
GLIMPSE_INLINE __m512i glimpse_broadcast32_512(int value) { return _mm512_set1_epi32(value); }

/// Interleaves 16 bytes from each of four rows into 64 bytes: for pixel j, bytes
/// (r0[j], r1[j], r2[j], r3[j]). This packs four input channels per 32-bit lane for `vpdpbusd`.
GLIMPSE_INLINE __m512i glimpse_interleave4x16_u8(const void *r0, const void *r1, const void *r2, const void *r3) {
    __m128i a = _mm_loadu_si128((const __m128i *)r0), b = _mm_loadu_si128((const __m128i *)r1);
    __m128i c = _mm_loadu_si128((const __m128i *)r2), d = _mm_loadu_si128((const __m128i *)r3);
    __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
    __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
    __m512i out = _mm512_castsi128_si512(_mm_unpacklo_epi16(ab_lo, cd_lo));
    out = _mm512_inserti32x4(out, _mm_unpackhi_epi16(ab_lo, cd_lo), 1);
    out = _mm512_inserti32x4(out, _mm_unpacklo_epi16(ab_hi, cd_hi), 2);
    out = _mm512_inserti32x4(out, _mm_unpackhi_epi16(ab_hi, cd_hi), 3);
    return out;
}

/// Bytes of a 256-entry table: byte j is table[idx[j]], the table given as four 64-byte parts
/// (two `vpermt2b` on the index's low 7 bits, its top bit picking between them).
GLIMPSE_INLINE __m512i glimpse_lookup256_u8_512(__m512i idx, __m512i t0, __m512i t1, __m512i t2, __m512i t3) {
    __m512i lo = glimpse_permute2_u8_512(t0, idx, t1), hi = glimpse_permute2_u8_512(t2, idx, t3);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi);
}

/// Unsigned byte maxima (`vpmaxub`) of 64, 32 and 16 bytes.
GLIMPSE_INLINE __m512i glimpse_max_u8_512(__m512i a, __m512i b) { return _mm512_max_epu8(a, b); }
GLIMPSE_INLINE __m256i glimpse_max_u8_256(__m256i a, __m256i b) { return _mm256_max_epu8(a, b); }
GLIMPSE_INLINE __m128i glimpse_max_u8_128(__m128i a, __m128i b) { return _mm_max_epu8(a, b); }

/// Stride-2 pooling taps from 64 bytes read as 32 16-bit lanes: the maximum of `acc` with the
/// lanes' low bytes (`odd` 0) or high bytes (`odd` 1), as 16-bit lanes.
GLIMPSE_INLINE __m512i glimpse_max_u16_byte_512(__m512i acc, __m512i v, int odd) {
    __m512i b = odd ? _mm512_srli_epi16(v, 8) : _mm512_and_si512(v, _mm512_set1_epi16(0xFF));
    return _mm512_max_epu16(acc, b);
}

/// The low byte of each 16-bit lane (`vpmovwb`).
GLIMPSE_INLINE __m256i glimpse_narrow_u16_u8_512(__m512i v) { return _mm512_cvtepi16_epi8(v); }
#endif

#if defined(__AVX512F__)
#define GLIMPSE_SIMD_HAS_AVX512F 1
// Conversions the Swift standard library leaves to out-of-line generic code for SIMD16.
/// int32 → float32 (`vcvtdq2ps`).
GLIMPSE_INLINE __m512 glimpse_cvt_i32_f32_512(__m512i v) { return _mm512_cvtepi32_ps(v); }
/// float32 → int32, rounding half to even (`vcvtps2dq` with an explicit rounding mode).
GLIMPSE_INLINE __m512i glimpse_cvt_f32_i32_even_512(__m512 v) {
    return _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/// The low byte of each int32 lane (`vpmovdb`).
GLIMPSE_INLINE __m128i glimpse_narrow_i32_u8_512(__m512i v) { return _mm512_cvtepi32_epi8(v); }
/// Even (`odd` = 0) or odd (`odd` = 1) lanes of the 32 floats a, b (`vpermt2ps`).
GLIMPSE_INLINE __m512 glimpse_deinterleave_f32_512(__m512 a, __m512 b, int odd) {
    if (odd) {
        return _mm512_permutex2var_ps(a, _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1), b);
    }
    return _mm512_permutex2var_ps(a, _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0), b);
}
/// The first `count` (0...16) bytes of `v` to `p` (`vmovdqu8` with a mask).
GLIMPSE_INLINE void glimpse_store_u8_first(void *p, __m128i v, int count) {
    _mm_mask_storeu_epi8(p, (__mmask16)((1u << count) - 1u), v);
}
/// The first `count` (0...16) bytes at `p` zero-extended to int32 lanes, zeros after them.
GLIMPSE_INLINE __m512i glimpse_load_u8_i32_first(const void *p, int count) {
    return _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8((__mmask16)((1u << count) - 1u), p));
}
/// The first `count` (0...16) floats of `v` to `p`.
GLIMPSE_INLINE void glimpse_store_f32_first(float *p, __m512 v, int count) {
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << count) - 1u), v);
}
/// Clamps finite lanes to [lower, upper]:: `vmaxps` then `vminps` (two instructions where a compare and a blend
/// each would take four).
GLIMPSE_INLINE __m512 glimpse_clamp_f32_512(__m512 v, __m512 lower, __m512 upper) {
    return _mm512_min_ps(_mm512_max_ps(v, lower), upper);
}
/// Sixteen bytes zero-extended to int32 lanes (`vpmovzxbd`).
GLIMPSE_INLINE __m512i glimpse_load_u8_i32_512(const void *p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
}
/// The floats at `p` in the lanes whose int32 in `mask` is negative (a true lane of a Swift
/// `SIMDMask`), zero in the others, which are not read (a zeroing-masked `vmovups` suppresses
/// their faults).
GLIMPSE_INLINE __m512 glimpse_maskz_load_f32_512(__m512i mask, const float *p) {
    return _mm512_maskz_loadu_ps(_mm512_cmplt_epi32_mask(mask, _mm512_setzero_si512()), p);
}
#endif

#if defined(__AVX2__)
#define GLIMPSE_SIMD_HAS_AVX2 1
/// The plain pre-VNNI sequence: `vpmaddubsw` (u8 × s8 pairs summed to saturating int16) then
/// `vpmaddwd` with ones (int16 pairs summed to int32), added to `acc`. Equal to `vpdpbusd` only while
/// no pair sum leaves the int16 range; the kernels use the exact split form below instead.
GLIMPSE_INLINE __m256i glimpse_maddubs_madd_256(__m256i acc, __m256i u8, __m256i s8) {
    __m256i pairs = _mm256_maddubs_epi16(u8, s8);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

/// Exact u8 × s8 dot products of four bytes per 32-bit lane with `vpmaddubsw` + `vpmaddwd`, for any
/// s8 weights and u8 inputs. `vpmaddubsw` saturates a pair sum u0·s0 + u1·s1 to int16, which full-range
/// operands can leave (2·255·128 = 65280). So the inputs arrive split as u = lo7 + 128·hi1
/// (`glimpse_u8_low7_256`, `glimpse_u8_high1_256`, once per panel vector): the pairs of lo7 × s8 stay
/// within ±32512 and those of hi1 × s8 within [−256, 254], neither saturates, and
/// Σ u·s = Σ lo7·s + 128·Σ hi1·s exactly.
GLIMPSE_INLINE __m256i glimpse_u8_low7_256(__m256i u8) { return _mm256_and_si256(u8, _mm256_set1_epi8(0x7F)); }
GLIMPSE_INLINE __m256i glimpse_u8_high1_256(__m256i u8) {
    return _mm256_and_si256(_mm256_srli_epi16(u8, 7), _mm256_set1_epi8(1));
}
GLIMPSE_INLINE __m256i glimpse_dpbusd_split_256(__m256i acc, __m256i lo7, __m256i hi1, __m256i s8) {
    __m256i ones = _mm256_set1_epi16(1);
    __m256i low = _mm256_madd_epi16(_mm256_maddubs_epi16(lo7, s8), ones);
    __m256i high = _mm256_madd_epi16(_mm256_maddubs_epi16(hi1, s8), ones);
    return _mm256_add_epi32(acc, _mm256_add_epi32(low, _mm256_slli_epi32(high, 7)));
}
/// Four bytes broadcast to all eight 32-bit lanes.
GLIMPSE_INLINE __m256i glimpse_broadcast32_256(int value) { return _mm256_set1_epi32(value); }

/// Lane conversions of the int8 kernels on AVX2 targets, eight lanes at a time (the Swift side calls
/// them on the two halves of a SIMD16; the standard library's generic SIMD16 conversions are
/// out-of-line calls per vector).
/// int32 → float32 (`vcvtdq2ps`).
GLIMPSE_INLINE __m256 glimpse_cvt_i32_f32_256(__m256i v) { return _mm256_cvtepi32_ps(v); }
/// float32 → int32, rounding half to even whatever the MXCSR mode (`vroundps`, then an exact
/// `vcvttps2dq` of the integral value).
GLIMPSE_INLINE __m256i glimpse_cvt_f32_i32_even_256(__m256 v) {
    return _mm256_cvttps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
/// The low byte of each of the sixteen int32 lanes of lo ++ hi, in order.
GLIMPSE_INLINE __m128i glimpse_narrow_i32_u8_2x256(__m256i lo, __m256i hi) {
    __m256i mask = _mm256_set1_epi32(0xFF);
    // Words a0-3 b0-3 | a4-7 b4-7, then bytes A0 B0 A0 B0 | A1 B1 A1 B1 as dwords: pick 0, 4, 1, 5.
    __m256i words = _mm256_packus_epi32(_mm256_and_si256(lo, mask), _mm256_and_si256(hi, mask));
    __m256i bytes = _mm256_packus_epi16(words, words);
    return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 0, 0, 0, 0)));
}
/// Eight bytes at `p` zero-extended to int32 lanes (`vpmovzxbd`).
GLIMPSE_INLINE __m256i glimpse_load_u8_i32_256(const void *p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}
/// Clamps finite lanes to [lower, upper] (`vmaxps` then `vminps`).
GLIMPSE_INLINE __m256 glimpse_clamp_f32_256(__m256 v, __m256 lower, __m256 upper) {
    return _mm256_min_ps(_mm256_max_ps(v, lower), upper);
}
/// Unsigned maxima of 32 bytes (`vpmaxub`), 16 bytes, and 16 16-bit lanes (`vpmaxuw`).
GLIMPSE_INLINE __m256i glimpse_max_u8_avx2_256(__m256i a, __m256i b) { return _mm256_max_epu8(a, b); }
GLIMPSE_INLINE __m128i glimpse_max_u8_avx2_128(__m128i a, __m128i b) { return _mm_max_epu8(a, b); }
GLIMPSE_INLINE __m256i glimpse_max_u16_avx2_256(__m256i a, __m256i b) { return _mm256_max_epu16(a, b); }

/// The exact AVX2 int8 GEMM (`qs8_gemm_8x32_avx2`) multiplies int16 operands with `vpmaddwd`: u8 inputs
/// and s8 weights widened to int16 once (the weights when the model loads, the inputs once per panel),
/// two products per 32-bit lane, which can neither overflow nor saturate. Sixteen multiply-adds per
/// instruction, as many as `vpmaddubsw` + `vpmaddwd` give onnxruntime, without its int16 saturation.
/// acc + vpmaddwd(a, b).
GLIMPSE_INLINE __m256i glimpse_madd_i16_256(__m256i acc, __m256i a, __m256i b) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
}
/// One k-group of a u8 B panel (`[32 columns][4 bytes]`, 128 bytes at `src`) as two int16 k-pair rows
/// (`[32 columns][2 int16]`, 128 bytes each, at `dst` and `dst + 128`): bytes 0-1 of each column to the
/// first, bytes 2-3 to the second, zero-extended.
GLIMPSE_INLINE void glimpse_widen_group_c4_c2(const void *src, void *dst) {
    const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    for (int q = 0; q < 4; q++) {
        const unsigned char *s = (const unsigned char *)src + 32 * q;
        // Columns 8q..8q+3 and 8q+4..8q+7 as int16 pairs: dwords (c0 k01, c0 k23, c1 k01, ...).
        __m256i w0 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)s));
        __m256i w1 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(s + 16)));
        __m256i x0 = _mm256_permutevar8x32_epi32(w0, order), x1 = _mm256_permutevar8x32_epi32(w1, order);
        _mm256_storeu_si256((__m256i *)((unsigned char *)dst + 32 * q), _mm256_permute2x128_si256(x0, x1, 0x20));
        _mm256_storeu_si256((__m256i *)((unsigned char *)dst + 128 + 32 * q), _mm256_permute2x128_si256(x0, x1, 0x31));
    }
}

/// Exact u8 × s8 dot products of four bytes per 32-bit lane without VNNI: bytes widened to int16
/// (`vpmovzxbw` / `vpmovsxbw`), then `vpmaddwd`, whose products and pair sums cannot overflow.
GLIMPSE_INLINE __m256i glimpse_dpbusd_exact_256(__m256i acc, __m256i u8, __m256i s8) {
    __m256i ulo = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(u8));
    __m256i uhi = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(u8, 1));
    __m256i slo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(s8));
    __m256i shi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(s8, 1));
    // Pair sums per 32-bit lane of the widened halves: lane j of lo/hi holds bytes 4j..4j+3 as two pairs.
    __m256i plo = _mm256_madd_epi16(ulo, slo);   // 8 lanes: pairs (0,1),(2,3),(4,5),...
    __m256i phi = _mm256_madd_epi16(uhi, shi);
    // Adjacent pair sums belong to one 4-byte group: hadd adds them, within 128-bit halves.
    __m256i sums = _mm256_hadd_epi32(plo, phi);
    sums = _mm256_permute4x64_epi64(sums, 0xD8);
    return _mm256_add_epi32(acc, sums);
}
#endif

#endif
