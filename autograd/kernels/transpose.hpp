#pragma once
// In-register transposes of 16 rows of 16 32-bit lanes (AVX-512: floats, or bf16 pairs viewed as
// floats) and of 8 rows of 8 floats (AVX), shared by the GEMMs' packers and the attention kernels
// (internal to autograd/kernels). Raw intrinsics: xsimd 8.1's zip_lo/zip_hi interleave within
// 128-bit lanes only. The target attributes let the bf16 file, built for any x86-64, inline the
// 16 x 16 one into its AVX512-BF16 functions.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstddef>

namespace xg::gemm::detail {

__attribute__((target("avx512f"))) inline void transpose16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]),
                  c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}

// r[j] becomes column j of the 8 x 8 block r[0..8).
__attribute__((target("avx"))) inline void transpose8x8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {  // t[2i] = r2i[0] r2i+1[0] r2i[1] r2i+1[1] | the same for [4], [5]
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {  // u[4i + c] = column c of rows 4i..4i+3 | column c + 4
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
    r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
  }
}

// dst[c * ldd + r] = src[r * ld + c] (+ bias[c] when bias is not null) for r < 8, c < 8: rows at
// or past `rows` read as zero (the bias is not added to them).
__attribute__((target("avx"))) inline void transpose8_block(const float* src, size_t ld, size_t rows,
                                                            const float* bias, float* dst, size_t ldd) {
  const __m256 b = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
  __m256 v[8];
  for (size_t r = 0; r < 8; ++r)
    v[r] = r < rows ? _mm256_add_ps(_mm256_loadu_ps(src + r * ld), b) : _mm256_setzero_ps();
  transpose8x8(v);
  for (size_t c = 0; c < 8; ++c) _mm256_storeu_ps(dst + c * ldd, v[c]);
}

// dst[0, N) = v's first N lanes, N <= 8, without touching dst[N, 8).
template <size_t N>
__attribute__((target("avx"))) inline void store_first(__m256 v, float* dst) {
  static_assert(N <= 8);
  if constexpr (N == 8) {
    _mm256_storeu_ps(dst, v);
  } else if constexpr (N == 6) {
    _mm_storeu_ps(dst, _mm256_castps256_ps128(v));
    _mm_storel_pi(reinterpret_cast<__m64*>(dst + 4), _mm256_extractf128_ps(v, 1));
  } else {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    for (size_t i = 0; i < N; ++i) dst[i] = lanes[i];
  }
}

}  // namespace xg::gemm::detail
#endif
