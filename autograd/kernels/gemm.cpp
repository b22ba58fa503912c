// Goto/BLIS-style GEMM. Loop nest, outermost first:
//   jc: NC columns of C   pc: KC of the inner dimension -> pack B block (KC x NC, shared)
//   ic: MC rows of C -> pack A block (MC x KC, per task)   jr: NR columns   ir: MR rows -> kernel
// The micro-kernel keeps an MR x NR tile of C in registers (MR x 2 SIMD accumulators), reading
// one packed B row (NR floats, stays in L1 across the ir loop) and broadcasting packed A values.
// Transposes are absorbed by the packing routines, so the kernel sees one layout.
#include "autograd/kernels/gemm.hpp"

#include <algorithm>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include <cstring>
#include <vector>

#include "autograd/parallel.hpp"
#include "autograd/xt.hpp"

namespace xg::gemm {

namespace {

constexpr size_t W = kSimdWidth;
constexpr size_t NR = 2 * W;
// AVX-512: 14 x 2 accumulators + 2 B rows = 30 of 32 registers. AVX2/SSE: 6 x 2 of 16.
#ifndef XG_GEMM_KC
#define XG_GEMM_KC 768
#define XG_GEMM_MC_PANELS 8
#endif
#ifndef XG_GEMM_MR
#define XG_GEMM_MR 14
#endif
constexpr size_t MR = W >= 16 ? XG_GEMM_MR : 6;
// Blocking measured on Sapphire Rapids (48 KB L1d, 2 MB L2): a deep KC (one pass over C for
// BERT's K = 768) beat the L1-sized KC = 256 by ~5-10% on large N, where C lives in L3 and every
// extra KC pass re-reads and re-writes it. The B micro-panel (KC x NR = 96 KB) then streams from
// L2; the A block (MC x KC = 336 KB) and the B block (KC x NC = 3 MB) share L2/L3.
constexpr size_t KC = XG_GEMM_KC;
constexpr size_t MC_MAX = MR * XG_GEMM_MC_PANELS;
#ifndef XG_GEMM_NC_PANELS
#define XG_GEMM_NC_PANELS 32
#endif
constexpr size_t NC = NR * XG_GEMM_NC_PANELS;

using PackBuffer = std::vector<float, xsimd::aligned_allocator<float, 64>>;

inline size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

#if defined(__AVX512F__)
// In-register transpose of 16 rows of 16 floats. Raw intrinsics: xsimd 8.1's zip_lo/zip_hi on
// AVX-512 interleave within 128-bit lanes only, so no portable xsimd spelling exists here.
inline void transpose16x16(__m512 r[16]) {
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
#endif

// panel[k*R + r] = src[r*ld + k] for r < rows (zero for rows <= r < R), k < kc. With AVX-512,
// 16 x 16 blocks go through registers; the rest (and other builds) in 8-deep k blocks whose
// writes stay in L1 while the source rows stream.
template <size_t R>
void transpose_into_panel(const float* src, size_t ld, size_t rows, size_t kc, float* panel) {
  size_t k0 = 0;
#if defined(__AVX512F__)
  for (; k0 + 16 <= kc; k0 += 16)
    for (size_t r0 = 0; r0 < R; r0 += 16) {
      __m512 v[16];
      for (size_t r = 0; r < 16; ++r)
        v[r] = r0 + r < rows ? _mm512_loadu_ps(src + (r0 + r) * ld + k0) : _mm512_setzero_ps();
      transpose16x16(v);
      const size_t lanes = std::min<size_t>(16, R - r0);
      const __mmask16 m = lanes == 16 ? __mmask16(0xffff) : __mmask16((1u << lanes) - 1);
      for (size_t kk = 0; kk < 16; ++kk) _mm512_mask_storeu_ps(panel + (k0 + kk) * R + r0, m, v[kk]);
    }
#endif
  constexpr size_t KB = 8;
  for (; k0 + KB <= kc; k0 += KB) {
    float* dst = panel + k0 * R;
    for (size_t r = 0; r < rows; ++r) {
      const float* s = src + r * ld + k0;
#pragma GCC unroll 8
      for (size_t kk = 0; kk < KB; ++kk) dst[kk * R + r] = s[kk];
    }
    for (size_t r = rows; r < R; ++r)
      for (size_t kk = 0; kk < KB; ++kk) dst[kk * R + r] = 0.f;
  }
  for (; k0 < kc; ++k0) {
    float* dst = panel + k0 * R;
    for (size_t r = 0; r < R; ++r) dst[r] = r < rows ? src[r * ld + k0] : 0.f;
  }
}

// Packs rows [i0, i0+mc) x cols [p0, p0+kc) of op(A) into MR-row panels: panel[k*MR + i].
// Rows past mc are zero so the kernel never needs a row mask.
void pack_a(bool trans_a, const float* A, size_t lda, size_t i0, size_t mc, size_t p0, size_t kc,
            float* out) {
  for (size_t ir = 0; ir < mc; ir += MR) {
    const size_t mr = std::min(MR, mc - ir);
    float* panel = out + ir * kc;
    if (trans_a) {  // A(i, k) = A[k*lda + i]: MR contiguous floats per k
      for (size_t k = 0; k < kc; ++k) {
        const float* src = A + (p0 + k) * lda + i0 + ir;
        float* dst = panel + k * MR;
        size_t i = 0;
        for (; i < mr; ++i) dst[i] = src[i];
        for (; i < MR; ++i) dst[i] = 0.f;
      }
    } else {  // A(i, k) = A[i*lda + k]: a transpose
      transpose_into_panel<MR>(A + (i0 + ir) * lda + p0, lda, mr, kc, panel);
    }
  }
}

// Packs rows [p0, p0+kc) x cols [j0+jr_begin, j0+jr_end) of op(B) into NR-column panels:
// panel[k*NR + j], columns past nc zero. Panels are laid out at their jr offset in `out`.
void pack_b(bool trans_b, const float* B, size_t ldb, size_t p0, size_t kc, size_t j0, size_t nc,
            size_t jr_begin, size_t jr_end, float* out) {
  for (size_t jr = jr_begin; jr < jr_end; jr += NR) {
    const size_t nr = std::min(NR, nc - jr);
    float* panel = out + jr * kc;
    if (!trans_b) {  // B(k, j) = B[k*ldb + j]: NR contiguous floats per k
      for (size_t k = 0; k < kc; ++k) {
        const float* src = B + (p0 + k) * ldb + j0 + jr;
        float* dst = panel + k * NR;
        if (nr == NR) {
          std::memcpy(dst, src, NR * sizeof(float));
        } else {
          size_t j = 0;
          for (; j < nr; ++j) dst[j] = src[j];
          for (; j < NR; ++j) dst[j] = 0.f;
        }
      }
    } else {  // B(k, j) = B[j*ldb + k]: a transpose
      transpose_into_panel<NR>(B + (j0 + jr) * ldb + p0, ldb, nr, kc, panel);
    }
  }
}

// C tile (ROWS x NR at c, row stride ldc) = alpha * (a_panel * b_panel) + beta * C tile.
// a: kc x MR packed (only the first ROWS of each MR group are used), b: kc x NR packed. Only the
// first mr x nr entries of the tile are stored. ROWS < MR serves the last, partial row panel
// without computing padding rows.
template <size_t ROWS>
void micro_kernel(size_t kc, const float* __restrict a, const float* __restrict b, float* c,
                  size_t ldc, size_t mr, size_t nr, float alpha, float beta) {
  fbatch acc0[ROWS], acc1[ROWS];
#pragma GCC unroll 16
  for (size_t i = 0; i < ROWS; ++i) acc0[i] = acc1[i] = fbatch(0.f);
  // Warm the C tile while the FMAs run; the stores at the end would otherwise miss.
  for (size_t i = 0; i < mr; ++i) {
    __builtin_prefetch(c + i * ldc, 1);
    __builtin_prefetch(c + i * ldc + NR - 1, 1);
  }
#pragma GCC unroll 4
  for (size_t k = 0; k < kc; ++k) {
    const fbatch b0 = fbatch::load_aligned(b);
    const fbatch b1 = fbatch::load_aligned(b + W);
#pragma GCC unroll 16
    for (size_t i = 0; i < ROWS; ++i) {
      const fbatch ai(a[i]);
      acc0[i] = xsimd::fma(ai, b0, acc0[i]);
      acc1[i] = xsimd::fma(ai, b1, acc1[i]);
    }
    a += MR;
    b += NR;
  }
  const fbatch va(alpha), vb(beta);
  if (mr == ROWS && nr == NR) {
#pragma GCC unroll 16
    for (size_t i = 0; i < ROWS; ++i) {
      float* row = c + i * ldc;
      fbatch r0 = acc0[i] * va, r1 = acc1[i] * va;
      if (beta != 0.f) {
        r0 = xsimd::fma(vb, fbatch::load_unaligned(row), r0);
        r1 = xsimd::fma(vb, fbatch::load_unaligned(row + W), r1);
      }
      r0.store_unaligned(row);
      r1.store_unaligned(row + W);
    }
    return;
  }
  alignas(64) float tile[ROWS * NR];
  for (size_t i = 0; i < ROWS; ++i) {
    (acc0[i] * va).store_aligned(tile + i * NR);
    (acc1[i] * va).store_aligned(tile + i * NR + W);
  }
  for (size_t i = 0; i < mr; ++i)
    for (size_t j = 0; j < nr; ++j) {
      float& dst = c[i * ldc + j];
      dst = beta != 0.f ? tile[i * NR + j] + beta * dst : tile[i * NR + j];
    }
}

// The smallest kernel that covers mr rows.
void run_kernel(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr,
                size_t nr, float alpha, float beta) {
  if (mr <= 2) return micro_kernel<2>(kc, a, b, c, ldc, mr, nr, alpha, beta);
  if (mr <= 4) return micro_kernel<4>(kc, a, b, c, ldc, mr, nr, alpha, beta);
  if (MR > 8 && mr <= 8) return micro_kernel<(MR > 8 ? 8 : MR)>(kc, a, b, c, ldc, mr, nr, alpha, beta);
  micro_kernel<MR>(kc, a, b, c, ldc, mr, nr, alpha, beta);
}

struct Problem {
  bool ta, tb;
  size_t M, N, K;
  float alpha;
  const float* A;
  size_t lda;
  const float* B;
  size_t ldb;
  float beta;
  float* C;
  size_t ldc;
};

void scale_c(const Problem& p) {  // K == 0: C = beta * C
  for (size_t i = 0; i < p.M; ++i)
    for (size_t j = 0; j < p.N; ++j) {
      float& v = p.C[i * p.ldc + j];
      v = p.beta != 0.f ? p.beta * v : 0.f;
    }
}

thread_local PackBuffer t_pack_a;
thread_local PackBuffer t_pack_b;  // this thread's B block; workers read it during a threaded call

// Multiplies the packed B block by rows [i0, i0+mc) x panel columns [jr_begin, jr_end).
void compute_block(const Problem& p, const float* bpack, size_t pc, size_t kc, size_t jc,
                   size_t nc, size_t i0, size_t mc, size_t jr_begin, size_t jr_end, float beta) {
  PackBuffer& apack = t_pack_a;
  apack.resize(std::max(apack.size(), round_up(mc, MR) * kc));
  pack_a(p.ta, p.A, p.lda, i0, mc, pc, kc, apack.data());
  for (size_t jr = jr_begin; jr < jr_end; jr += NR) {
    const size_t nr = std::min(NR, nc - jr);
    for (size_t ir = 0; ir < mc; ir += MR) {
      const size_t mr = std::min(MR, mc - ir);
      run_kernel(kc, apack.data() + ir * kc, bpack + jr * kc, p.C + (i0 + ir) * p.ldc + jc + jr,
                   p.ldc, mr, nr, p.alpha, beta);
    }
  }
}

// One GEMM. With threads > 1 the B block is packed cooperatively and the (ic, column group)
// tasks of each block are shared out; with threads == 1 everything runs on this thread.
void run(const Problem& p, int threads) {
  if (p.M == 0 || p.N == 0) return;
  if (p.K == 0) return scale_c(p);
  const size_t T = size_t(std::max(1, threads));
  // Row blocks: at most MC_MAX rows each, and at least T of them when M allows.
  size_t m_blocks = std::max((p.M + MC_MAX - 1) / MC_MAX, std::min(T, (p.M + MR - 1) / MR));
  if (T > 1) m_blocks = round_up(m_blocks, std::min(T, (p.M + MR - 1) / MR));
  const size_t mc_step = round_up((p.M + m_blocks - 1) / m_blocks, MR);
  m_blocks = (p.M + mc_step - 1) / mc_step;

  // Kept between calls: a fresh 3 MB buffer per call costs page faults on every GEMM.
  PackBuffer& bpack = t_pack_b;
  bpack.resize(std::max(bpack.size(), round_up(std::min(NC, p.N), NR) * KC));

  for (size_t jc = 0; jc < p.N; jc += NC) {
    const size_t nc = std::min(NC, p.N - jc);
    const size_t n_panels = (nc + NR - 1) / NR;
    // Column groups only when there are too few row blocks to keep every thread busy.
    const size_t n_groups = m_blocks >= T ? 1 : std::min(n_panels, T);
    for (size_t pc = 0; pc < p.K; pc += KC) {
      const size_t kc = std::min(KC, p.K - pc);
      const float beta = pc == 0 ? p.beta : 1.f;
      auto panel_range = [&](size_t g, size_t groups) {
        const size_t per = (n_panels + groups - 1) / groups;
        return std::make_pair(std::min(n_panels, g * per) * NR, std::min(n_panels, (g + 1) * per) * NR);
      };
      if (T == 1) {
        pack_b(p.tb, p.B, p.ldb, pc, kc, jc, nc, 0, n_panels * NR, bpack.data());
        for (size_t ib = 0; ib < m_blocks; ++ib) {
          const size_t i0 = ib * mc_step;
          compute_block(p, bpack.data(), pc, kc, jc, nc, i0, std::min(mc_step, p.M - i0), 0,
                        n_panels * NR, beta);
        }
        continue;
      }
      parallel_for(std::min(T, n_panels), [&](size_t t) {
        auto [b0, b1] = panel_range(t, std::min(T, n_panels));
        pack_b(p.tb, p.B, p.ldb, pc, kc, jc, nc, b0, b1, bpack.data());
      });
      parallel_for(m_blocks * n_groups, [&](size_t task) {
        const size_t ib = task / n_groups, g = task % n_groups;
        const size_t i0 = ib * mc_step;
        auto [j0, j1] = panel_range(g, n_groups);
        if (j0 < j1)
          compute_block(p, bpack.data(), pc, kc, jc, nc, i0, std::min(mc_step, p.M - i0), j0, j1,
                        beta);
      });
    }
  }
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha, const float* A,
           size_t lda, const float* B, size_t ldb, float beta, float* C, size_t ldc) {
  const Problem p{trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc};
  // Tiny products are not worth waking the pool for.
  const bool small = double(M) * double(N) * double(K) < 64.0 * 64.0 * 64.0;
  run(p, small ? 1 : num_threads());
}

namespace {
// Runs one(b, threads) for every batch entry: whole GEMMs per thread when there are enough of
// them, else each GEMM on all threads.
template <class One>
void for_each_batch(size_t batch, One one) {
  const size_t T = size_t(num_threads());
  if (batch >= T || T == 1) {
    parallel_for(batch, [&](size_t b) { one(b, 1); });
  } else {
    for (size_t b = 0; b < batch; ++b) one(b, int(T));
  }
}
}  // namespace

void sgemm_batched(bool trans_a, bool trans_b, size_t batch, size_t M, size_t N, size_t K,
                   float alpha, const float* A, size_t lda, size_t stride_a, const float* B,
                   size_t ldb, size_t stride_b, float beta, float* C, size_t ldc,
                   size_t stride_c) {
  for_each_batch(batch, [&](size_t b, int threads) {
    run({trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta,
         C + b * stride_c, ldc},
        threads);
  });
}

void sgemm_batched_offsets(bool trans_a, bool trans_b, size_t batch, size_t M, size_t N, size_t K,
                           float alpha, const float* A, size_t lda, const size_t* offsets_a,
                           const float* B, size_t ldb, const size_t* offsets_b, float beta, float* C,
                           size_t ldc, const size_t* offsets_c) {
  for_each_batch(batch, [&](size_t b, int threads) {
    run({trans_a, trans_b, M, N, K, alpha, A + offsets_a[b], lda, B + offsets_b[b], ldb, beta,
         C + offsets_c[b], ldc},
        threads);
  });
}

void sgemm_reference(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                     const float* A, size_t lda, const float* B, size_t ldb, float beta, float* C,
                     size_t ldc) {
  for (size_t i = 0; i < M; ++i)
    for (size_t j = 0; j < N; ++j) {
      double s = 0;
      for (size_t k = 0; k < K; ++k) {
        const float a = trans_a ? A[k * lda + i] : A[i * lda + k];
        const float b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
        s += double(a) * double(b);
      }
      float& c = C[i * ldc + j];
      c = float(alpha * s + (beta != 0.f ? double(beta) * c : 0.0));
    }
}

}  // namespace xg::gemm
