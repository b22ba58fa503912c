// Goto/BLIS-style fp32 GEMM; the loop nest is gemm_driver.hpp's. The micro-kernel keeps an MR x NR
// tile of C in registers (MR x 2 SIMD accumulators), reading one packed B row (NR floats) per k and
// broadcasting A values from a packed panel or, for short GEMMs, from A's rows in place.
// Transposes are absorbed by the packing routines (a transposed A is always packed).
#include "autograd/kernels/gemm.hpp"

#include <algorithm>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

#include "autograd/dtype.hpp"
#include "autograd/kernels/gemm_driver.hpp"
#include "autograd/kernels/round_up.hpp"
#include "autograd/kernels/transpose.hpp"
#include "autograd/parallel.hpp"
#include "autograd/xt.hpp"

namespace xg::gemm {

namespace {

constexpr size_t W = kSimdWidth;
constexpr size_t NR = 2 * W;
// AVX-512: 14 x 2 accumulators + 2 B rows = 30 of 32 registers. AVX2/SSE: 6 x 2 of 16.
#ifndef XG_GEMM_KC
#define XG_GEMM_KC 768
#endif
#ifndef XG_GEMM_MC_PANELS
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


// panel[k*R + r] = src[r*ld + k] for r < rows (zero for rows <= r < R), k < kc. With AVX-512,
// 16 x 16 blocks go through registers, with AVX 8 x 8 ones (R = 6: 8 x 8 with overlapping
// stores); the rest (and other builds) in 8-deep k blocks whose writes stay in L1 while the
// source rows stream.
template <size_t R>
void transpose_into_panel(const float* src, size_t ld, size_t rows, size_t kc, float* panel) {
  size_t k0 = 0;
#if defined(__AVX512F__)
  for (; k0 + 16 <= kc; k0 += 16)
    for (size_t r0 = 0; r0 < R; r0 += 16) {
      __m512 v[16];
      for (size_t r = 0; r < 16; ++r)
        v[r] = r0 + r < rows ? _mm512_loadu_ps(src + (r0 + r) * ld + k0) : _mm512_setzero_ps();
      detail::transpose16x16(v);
      const size_t lanes = std::min<size_t>(16, R - r0);
      const __mmask16 m = lanes == 16 ? __mmask16(0xffff) : __mmask16((1u << lanes) - 1);
      for (size_t kk = 0; kk < 16; ++kk) _mm512_mask_storeu_ps(panel + (k0 + kk) * R + r0, m, v[kk]);
    }
#elif defined(__AVX__)  // (with __x86_64__ or __i386__, as transpose.hpp)
  if constexpr (R % 8 == 0)  // AVX2's NR = 16
    for (; k0 + 8 <= kc; k0 += 8)
      for (size_t r0 = 0; r0 < R; r0 += 8)
        detail::transpose8_block(src + r0 * ld + k0, ld, rows > r0 ? rows - r0 : 0, nullptr, panel + k0 * R + r0, R);
  else if constexpr (R < 8)  // AVX2's MR = 6: each k's R floats as 8, the next k overwriting the extra lanes
    for (; k0 + 8 <= kc; k0 += 8) {
      __m256 v[8];
      for (size_t r = 0; r < 8; ++r) v[r] = r < rows ? _mm256_loadu_ps(src + r * ld + k0) : _mm256_setzero_ps();
      detail::transpose8x8(v);
      float* dst = panel + k0 * R;
      for (size_t kk = 0; kk < 7; ++kk) _mm256_storeu_ps(dst + kk * R, v[kk]);
      detail::store_first<R>(v[7], dst + 7 * R);  // the last k's stays within its R floats
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

// dst[0, n) = src[0, n), dst[n, width) = 0: a partial panel row.
inline void copy_padded(const float* src, size_t n, size_t width, float* dst) {
  std::copy_n(src, n, dst);
  std::fill(dst + n, dst + width, 0.f);
}

// Packs rows [i0, i0+mc) x cols [p0, p0+kc) of op(A) into MR-row panels: panel[k*MR + i].
// Rows past mc are zero so the kernel never needs a row mask.
void pack_a(bool trans_a, const float* A, size_t lda, size_t i0, size_t mc, size_t p0, size_t kc,
            float* out) {
  if (trans_a) {  // A(i, k) = A[k*lda + i]: MR contiguous floats per k and panel
    // Row by row of A, so each source row is read once while the panels' k rows fill. The rows'
    // mc floats lie lda apart, a stride the hardware prefetcher did not keep ahead of: the loads
    // stalled (a sixth of a 768x768x4096 A^T GEMM's time on Zen 2), so each row fetches a later one.
    constexpr size_t kAhead = 8;
    for (size_t k = 0; k < kc; ++k) {
      const float* src = A + (p0 + k) * lda + i0;
      if (k + kAhead < kc) {
        for (size_t i = 0; i < mc; i += 16) __builtin_prefetch(src + kAhead * lda + i);
        __builtin_prefetch(src + kAhead * lda + mc - 1);
      }
      for (size_t ir = 0; ir < mc; ir += MR) {
        const size_t mr = std::min(MR, mc - ir);
        float* dst = out + ir * kc + k * MR;
#if defined(__AVX512F__)
        static_assert(MR <= 16, "an A panel row is one masked vector");
        _mm512_mask_storeu_ps(dst, __mmask16((1u << MR) - 1), _mm512_maskz_loadu_ps(__mmask16((1u << mr) - 1), src + ir));
#else
        // With MR < W (AVX2: 6 of 8), a whole vector while the next k row (written later) takes
        // the extra lanes and the block's rows cover the load: a 6-float copy_padded is a memmove
        // call per panel row (2% of a mini training step).
        if (MR <= W && k + 1 < kc && ir + W <= mc)
          fbatch::load_unaligned(src + ir).store_unaligned(dst);
        else if (mr == MR)  // a constant size: inline moves, not a call (a panel's last k row, the block's last panel)
          std::memcpy(dst, src + ir, MR * sizeof(float));
        else
          copy_padded(src + ir, mr, MR, dst);
#endif
      }
    }
    return;
  }
  for (size_t ir = 0; ir < mc; ir += MR)  // A(i, k) = A[i*lda + k]: a transpose
    transpose_into_panel<MR>(A + (i0 + ir) * lda + p0, lda, std::min(MR, mc - ir), kc, out + ir * kc);
}

// Packs rows [p0, p0+kc) x cols [j0+jr_begin, j0+jr_end) of op(B) into NR-column panels:
// panel[k*NR + j], columns past nc zero. Panels are laid out at their jr offset in `out`.
void pack_b(bool trans_b, const float* B, size_t ldb, size_t p0, size_t kc, size_t j0, size_t nc,
            size_t jr_begin, size_t jr_end, float* out) {
  if (!trans_b) {  // B(k, j) = B[k*ldb + j]: NR contiguous floats per k
    // KB rows of k at a time across the panels: panel by panel, each k read one cache line of a
    // row ldb floats from the last, and the loads stalled on memory (on Zen 2, with B past its
    // 512 KB L2, 6% of a mini training step); row by row across all panels, the stores lie kc * NR
    // floats apart, a multiple of 4 KB at BERT's K, and evict each other from L1.
    constexpr size_t KB = 16;
    for (size_t k0 = 0; k0 < kc; k0 += KB)
      for (size_t jr = jr_begin; jr < jr_end; jr += NR) {
        const size_t nr = std::min(NR, nc - jr);
        for (size_t k = k0; k < std::min(kc, k0 + KB); ++k) {
          const float* src = B + (p0 + k) * ldb + j0 + jr;
          float* dst = out + jr * kc + k * NR;
          if (nr == NR)
            for (size_t j = 0; j < NR; j += W) fbatch::load_unaligned(src + j).store_aligned(dst + j);
          else
            copy_padded(src, nr, NR, dst);
        }
      }
    return;
  }
  // B(k, j) = B[j*ldb + k]: a transpose, panel by panel (across panels, as pack_a goes, measured ~3%
  // slower: bench_gemm 1024 3072 768, one thread)
  for (size_t jr = jr_begin; jr < jr_end; jr += NR)
    transpose_into_panel<NR>(B + (j0 + jr) * ldb + p0, ldb, std::min(NR, nc - jr), kc, out + jr * kc);
}

// C tile = alpha * acc (+ beta * C) (+ bias): the first mr x nr entries. Inlined, so the
// accumulators go from registers to C (a call would spill them to pass them).
template <size_t ROWS>
[[gnu::always_inline]] inline void store_tile(const fbatch* acc0, const fbatch* acc1, float* c, size_t ldc, size_t mr, size_t nr, float alpha,
                float beta, const float* bias) {
  const fbatch va(alpha), vb(beta);
  if (mr == ROWS && nr == NR) {
    const fbatch bias0 = bias ? fbatch::load_unaligned(bias) : fbatch(0.f);
    const fbatch bias1 = bias ? fbatch::load_unaligned(bias + W) : fbatch(0.f);
#pragma GCC unroll 16
    for (size_t i = 0; i < ROWS; ++i) {
      float* row = c + i * ldc;
      fbatch r0 = acc0[i] * va, r1 = acc1[i] * va;
      // alpha * sum rounded on its own: GCC would fuse it into the bias add (or the beta term's
      // add) as one FMA, with or without a bias by different choices, and the bias would not give
      // the bits of a pass after the call.
      keep_in_register(r0, r1);
      if (beta != 0.f) {
        r0 = xsimd::fma(vb, fbatch::load_unaligned(row), r0);
        r1 = xsimd::fma(vb, fbatch::load_unaligned(row + W), r1);
      }
      if (bias) r0 += bias0, r1 += bias1;
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
      if (bias) dst += bias[j];
    }
}

// Where a micro-kernel reads A: a packed panel (kc x MR, k-major) ...
struct PanelA {
  const float* a;
  float at(size_t i) const { return a[i]; }
  void next_k() { a += MR; }
};
// ... or A's rows in place, k contiguous along each (no packing). Rows past mr read row mr - 1
// (their results are never stored), so nothing past A is read.
template <size_t ROWS>
struct RowsA {
  RowsA(const float* a, size_t lda, size_t mr) {
    for (size_t i = 0; i < ROWS; ++i) row[i] = a + std::min(i, mr - 1) * lda;
  }
  float at(size_t i) const { return row[i][k]; }
  void next_k() { ++k; }
  const float* row[ROWS];
  size_t k = 0;
};

// C tile (ROWS x NR at c, row stride ldc) = alpha * (A rows * b_panel) + beta * C tile, then
// + bias (NR floats, the tile's columns) when not null.
// A: ROWS rows of kc (`a`, a PanelA or RowsA), b: kc x NR packed. Only the first mr x nr entries of
// the tile are stored. ROWS < MR serves the last, partial row panel with fewer accumulators (rows
// past mr are computed, from zero padding or a repeated row, and never stored).
// Never inlined: each kernel gets the registers to itself (and its own line in a profile).
template <size_t ROWS, class ARows>
[[gnu::noinline]] void micro_kernel(size_t kc, ARows a, const float* __restrict b, float* c, size_t ldc,
                                    size_t mr, size_t nr, float alpha, float beta, const float* bias) {
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
      const fbatch ai(a.at(i));
      acc0[i] = xsimd::fma(ai, b0, acc0[i]);
      acc1[i] = xsimd::fma(ai, b1, acc1[i]);
    }
    a.next_k();
    b += NR;
  }
  store_tile<ROWS>(acc0, acc1, c, ldc, mr, nr, alpha, beta, bias);
}

// The smallest kernel that covers mr rows (ROWS(n) picks it), reading A through make_a(ROWS(n)).
template <class MakeA>
void run_kernel(size_t kc, MakeA make_a, const float* b, float* c, size_t ldc, size_t mr, size_t nr, float alpha,
                float beta, const float* bias) {
  using two = std::integral_constant<size_t, 2>;
  using four = std::integral_constant<size_t, 4>;
  using eight = std::integral_constant<size_t, (MR > 8 ? 8 : MR)>;
  using all = std::integral_constant<size_t, MR>;
  if (mr <= 2) return micro_kernel<2>(kc, make_a(two{}), b, c, ldc, mr, nr, alpha, beta, bias);
  if (mr <= 4) return micro_kernel<4>(kc, make_a(four{}), b, c, ldc, mr, nr, alpha, beta, bias);
  if (MR > 8 && mr <= 8) return micro_kernel<eight::value>(kc, make_a(eight{}), b, c, ldc, mr, nr, alpha, beta, bias);
  micro_kernel<MR>(kc, make_a(all{}), b, c, ldc, mr, nr, alpha, beta, bias);
}

struct Fp32Kernels {
  using Packed = float;
  static constexpr size_t MR = gemm::MR, NR = gemm::NR, KC = gemm::KC, MC_MAX = gemm::MC_MAX,
                          NC = gemm::NC;
  static size_t depth(size_t kc) { return kc; }
  static void pack_a(bool ta, const float* A, size_t lda, size_t i0, size_t mc, size_t p0,
                     size_t kc, float* out) {
    gemm::pack_a(ta, A, lda, i0, mc, p0, kc, out);
  }
  static void pack_b(bool tb, const float* B, size_t ldb, size_t p0, size_t kc, size_t j0,
                     size_t nc, size_t jr_begin, size_t jr_end, float* out) {
    gemm::pack_b(tb, B, ldb, p0, kc, j0, nc, jr_begin, jr_end, out);
  }
  static void kernel(size_t kc, const float* a, const float* b, float* c, size_t ldc, size_t mr,
                     size_t nr, float alpha, float beta, const float* bias) {
    run_kernel(kc, [a](auto) { return PanelA{a}; }, b, c, ldc, mr, nr, alpha, beta, bias);
  }
  // AVX-512's 14-row kernel in place is untimed: 14 row pointers spill, and rows 4 KB apart all
  // fall in one 12-way L1 set; it keeps packing.
  static constexpr bool kReadsAInPlace = MR <= 8;
  // The kernel on A's rows where they are: a + i * lda, k contiguous.
  static void kernel_rows(size_t kc, const float* a, size_t lda, const float* b, float* c, size_t ldc, size_t mr,
                          size_t nr, float alpha, float beta, const float* bias) {
    run_kernel(kc, [&](auto rows) { return RowsA<rows>(a, lda, mr); }, b, c, ldc, mr, nr, alpha, beta, bias);
  }
};

// sgemm_bf16's fallback (no AVX512-BF16): op(A) and op(B) rounded to bf16 as they are packed, then
// the fp32 kernel, on every thread. Rounding whole copies first, on one thread, made a bf16 mini
// training step 2.2x slower than fp32 on an AVX2 CPU; the bits are the same (each value rounds
// alone, and the padding zeros stay zero).
struct Bf16RoundedKernels : Fp32Kernels {
  static constexpr bool kReadsAInPlace = false;  // A is rounded as it is packed
  static void pack_a(bool ta, const float* A, size_t lda, size_t i0, size_t mc, size_t p0,
                     size_t kc, float* out) {
    gemm::pack_a(ta, A, lda, i0, mc, p0, kc, out);
    detail::round_to_bf16(out, round_up(mc, MR) * kc);
  }
  static void pack_b(bool tb, const float* B, size_t ldb, size_t p0, size_t kc, size_t j0,
                     size_t nc, size_t jr_begin, size_t jr_end, float* out) {
    gemm::pack_b(tb, B, ldb, p0, kc, j0, nc, jr_begin, jr_end, out);
    detail::round_to_bf16(out + jr_begin * kc, (jr_end - jr_begin) * kc);  // whole panels: NR multiples
  }
};
static_assert(!Bf16RoundedKernels::kReadsAInPlace, "its A must be rounded as it is packed");

using Problem = detail::Problem<float>;
void run(const Problem& p, int threads) { detail::run<Fp32Kernels>(p, threads); }

}  // namespace

void detail::round_to_bf16(float* x, size_t n) {
  using ubatch = xsimd::batch<uint32_t>;
  using ibatch = xsimd::batch<int32_t>;
  size_t i = 0;
  for (; i + W <= n; i += W) {  // float_to_bf16's arithmetic, lane by lane
    const ubatch u = xsimd::bitwise_cast<ubatch>(fbatch::load_unaligned(x + i));
    const ubatch nearest_even = (u + ubatch(0x7fffu) + ((u >> 16) & ubatch(1u))) & ubatch(0xffff0000u);
    const ubatch quiet_nan = (u | ubatch(0x00400000u)) & ubatch(0xffff0000u);
    // both sides below 2^31: a signed compare, one instruction on AVX2 (unsigned takes two halves)
    const auto nan = xsimd::bitwise_cast<ibatch>(u & ubatch(0x7fffffffu)) > ibatch(0x7f800000);
    const ibatch rounded = xsimd::select(nan, xsimd::bitwise_cast<ibatch>(quiet_nan), xsimd::bitwise_cast<ibatch>(nearest_even));
    xsimd::bitwise_cast<fbatch>(rounded).store_unaligned(x + i);
  }
  for (; i < n; ++i) x[i] = bf16_to_float(float_to_bf16(x[i]));
}

void detail::run_fp32_packed(const detail::Problem<float>& p, const float* packed) {
  detail::run<Fp32Kernels>(p, detail::threads_for(p.M, p.N, p.K), packed);
}

void detail::run_bf16_rounded(const detail::Problem<float>& p, const float* packed) {
  detail::run<Bf16RoundedKernels>(p, detail::threads_for(p.M, p.N, p.K), packed);
}

void PackedB::Free::operator()(void* p) const { std::free(p); }

PackedB::PackedB(Kind kind, size_t K, size_t N, size_t words)
    : kind_(kind), K_(K), N_(N), words_(words),
      data_(static_cast<uint32_t*>(std::aligned_alloc(64, round_up(std::max<size_t>(words, 1) * 4, 64)))) {
  if (!data_) throw std::bad_alloc();
}

PackedB PackedB::fp32(bool trans_b, size_t K, size_t N, const float* B, size_t ldb) {
  PackedB out(Kind::Fp32, K, N, detail::packed_b_size<Fp32Kernels>(K, N));
  detail::pack_whole_b<Fp32Kernels>(trans_b, B, ldb, K, N, out.floats());
  return out;
}

void sgemm_packed(bool trans_a, size_t M, float alpha, const float* A, size_t lda, const PackedB& B,
                  float beta, float* C, size_t ldc, const Epilogue& epilogue) {
  const Problem p{trans_a, false, M, B.N(), B.K(), alpha, A, lda, nullptr, 0, beta, C, ldc, epilogue};
  if (B.kind_ == PackedB::Kind::Fp32) return detail::run_fp32_packed(p, B.floats());
  if (B.kind_ == PackedB::Kind::Int8) return detail::run_int8_packed(p, B.data_.get());
  detail::run_bf16_packed(p, B.data_.get(), B.kind_ == PackedB::Kind::Bf16Pairs);
}

void sgemm(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha, const float* A,
           size_t lda, const float* B, size_t ldb, float beta, float* C, size_t ldc,
           const Epilogue& epilogue) {
  run(Problem{trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, epilogue},
      detail::threads_for(M, N, K));
}

namespace {
// Batch entry `offset` of an operand. With K == 0 it has no elements and is never read, and its
// pointer may be null (an empty tensor's): it stays as it is, since null plus a non-zero offset is
// undefined.
const float* operand(const float* base, size_t offset, size_t K) { return K == 0 ? base : base + offset; }

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
  if (M == 0 || N == 0) return;  // C may be empty (null): no offsets into it
  for_each_batch(batch, [&](size_t b, int threads) {
    run({trans_a, trans_b, M, N, K, alpha, operand(A, b * stride_a, K), lda, operand(B, b * stride_b, K), ldb, beta,
         C + b * stride_c, ldc},
        threads);
  });
}

void sgemm_batched_offsets(bool trans_a, bool trans_b, size_t batch, size_t M, size_t N, size_t K,
                           float alpha, const float* A, size_t lda, const size_t* offsets_a,
                           const float* B, size_t ldb, const size_t* offsets_b, float beta, float* C,
                           size_t ldc, const size_t* offsets_c) {
  if (M == 0 || N == 0) return;
  for_each_batch(batch, [&](size_t b, int threads) {
    run({trans_a, trans_b, M, N, K, alpha, operand(A, offsets_a[b], K), lda, operand(B, offsets_b[b], K), ldb, beta,
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
