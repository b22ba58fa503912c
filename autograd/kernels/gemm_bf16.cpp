// bf16 GEMM: op(A) and op(B) rounded to bf16, products summed in fp32. The native path packs
// both operands as bf16 pairs (two adjacent k values in one 32-bit word, the even k in the low
// half), the layout AVX512-BF16's vdpbf16ps multiplies: one instruction adds
// a[2p]*b[2p] + a[2p+1]*b[2p+1] into each of 16 fp32 lanes. The loop nest is gemm_driver.hpp's.
// The kernel code carries a target attribute, so the file builds for any x86-64 and the
// instructions run only where the CPU reports AVX512-BF16 (checked once, at run time).
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/dtype.hpp"
#include "autograd/kernels/gemm.hpp"
#include "autograd/kernels/gemm_driver.hpp"
#include "autograd/kernels/transpose.hpp"
#include "autograd/parallel.hpp"

// The AVX512-BF16 intrinsics need GCC 10 or clang 9; older compilers build the fallback alone.
#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 9) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10))
#define XG_HAVE_BF16_KERNEL 1
#include <cpuid.h>
#include <immintrin.h>
#define XG_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#else
#define XG_HAVE_BF16_KERNEL 0
#endif

namespace xg::gemm {

namespace {

bool cpu_has_avx512_bf16() {
#if XG_HAVE_BF16_KERNEL
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  const bool bf16 = (eax >> 5) & 1u;  // CPUID.(EAX=7,ECX=1):EAX[5] = AVX512_BF16
  // __builtin_cpu_supports also checks that the OS saves the AVX-512 registers.
  return bf16 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

Bf16Kernel kernel_from_env() {
  const char* env = std::getenv("XGRAD_BF16_KERNEL");
  const std::string v = env ? env : "";
  if (v.empty() || v == "auto")
    return bf16_native_available() ? Bf16Kernel::Native : Bf16Kernel::Fallback;
  if (v == "fallback") return Bf16Kernel::Fallback;
  if (v == "native") {
    if (!bf16_native_available())
      throw std::runtime_error("XGRAD_BF16_KERNEL=native: this CPU lacks AVX512-BF16");
    return Bf16Kernel::Native;
  }
  throw std::invalid_argument("XGRAD_BF16_KERNEL: expected auto, native or fallback, got '" + v + "'");
}

std::atomic<Bf16Kernel>& selected_kernel() {
  static std::atomic<Bf16Kernel> k{kernel_from_env()};
  return k;
}

// ---- fallback: the fp32 GEMM on panels rounded to bf16 as they are packed (gemm.cpp) ----

void run_fallback(const detail::Problem<float>& p) { detail::run_bf16_rounded(p); }

// bf16 B widened to floats (exactly), whose rounding then leaves them as they are; rows shared
// out over the threads.
void run_fallback(const detail::Problem<uint16_t>& p) {
  const size_t rows = p.tb ? p.N : p.K, cols = p.tb ? p.K : p.N;
  std::vector<float> b(rows * cols);
  parallel_rows(rows, cols, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r)
      for (size_t c = 0; c < cols; ++c) b[r * cols + c] = bf16_to_float(p.B[r * p.ldb + c]);
  });
  detail::run_bf16_rounded({p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A, p.lda, b.data(), cols, p.beta, p.C, p.ldc, p.epilogue});
}

#if XG_HAVE_BF16_KERNEL
// ---- native: AVX512-BF16 ----

// AVX-512: 14 x 2 accumulators + 2 B vectors = 30 of 32 registers, as the fp32 kernel. KC is in
// k elements (even, so pairs never straddle blocks).
// The XG_BF16_* macros let a benchmark build try other blockings.
#ifndef XG_BF16_KC
#define XG_BF16_KC 768
#endif
#ifndef XG_BF16_MC_PANELS
#define XG_BF16_MC_PANELS 8
#endif
#ifndef XG_BF16_NC_PANELS
#define XG_BF16_NC_PANELS 32
#endif
constexpr size_t MR = 14, NR = 32, KC = XG_BF16_KC, MC_MAX = MR * XG_BF16_MC_PANELS,
                 NC = NR * XG_BF16_NC_PANELS;
static_assert(KC % 2 == 0, "bf16 pairs must not straddle KC blocks");

inline size_t pairs(size_t kc) { return (kc + 1) / 2; }

inline __mmask16 first_lanes(size_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1); }

// 16 (lo, hi) float pairs -> 16 words holding bf16(lo) | bf16(hi) << 16. vcvtne2ps2bf16 rounds
// to nearest even as float_to_bf16 does, but flushes subnormals to zero (as vdpbf16ps does).
XG_BF16_TARGET inline __m512i pair_bf16(__m512 lo, __m512 hi) {
  alignas(64) static const uint16_t kInterleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                       21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                       11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);  // bf16 lanes lo0..lo15, hi0..hi15
  return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), v);
}

// The packers fill panel[p * R + r] = pair(k = 2p, 2p + 1) of row r, for rows < `rows` (zero up
// to R) and p < pairs(kc); a missing k = kc (odd kc) is zero.

// 16 pair words from 16 lo values and the 16 hi values (hi null: zero) at the first lanes of m.
XG_BF16_TARGET inline __m512i pair_words(const float* lo, const float* hi, __mmask16 m) {
  const __m512 l = _mm512_maskz_loadu_ps(m, lo);
  return pair_bf16(l, hi ? _mm512_maskz_loadu_ps(m, hi) : _mm512_setzero_ps());
}
XG_BF16_TARGET inline __m512i pair_words(const uint16_t* lo, const uint16_t* hi, __mmask16 m) {
  const __m512i l = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, lo));
  const __m512i h = hi ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, hi)) : _mm512_setzero_si512();
  return _mm512_or_si512(l, _mm512_slli_epi32(h, 16));
}

// Element (r, k) at src[k * ld + r]: r runs along memory. Packs the n rows starting at src into
// panels of R rows, panel j at out + j * R * pairs(kc), pair row by pair row, so that each source
// row is read once while the panels fill (panel by panel, the rows of a KC block fell out of L1
// between panels).
template <size_t R, class Elem>
XG_BF16_TARGET void pack_pairs_r_contiguous(const Elem* src, size_t ld, size_t n, size_t kc, uint32_t* out) {
  const size_t np = pairs(kc);
  for (size_t p = 0; p < np; ++p) {
    const Elem* lo = src + 2 * p * ld;
    const Elem* hi = 2 * p + 1 < kc ? lo + ld : nullptr;
    for (size_t c0 = 0; c0 < n; c0 += R) {
      const size_t rows = std::min(R, n - c0);
      uint32_t* dst = out + c0 * np + p * R;
      for (size_t r0 = 0; r0 < R; r0 += 16) {
        const __m512i words = r0 < rows ? pair_words(lo + c0 + r0, hi ? hi + c0 + r0 : nullptr, first_lanes(rows - r0))
                                        : _mm512_setzero_si512();
        _mm512_mask_storeu_epi32(dst + r0, first_lanes(R - r0), words);
      }
    }
  }
}

// Element (r, k) at src[r * ld + k]: k runs along memory. Blocks of 16 rows x 32 k: each row's
// 32 values convert to 16 pair words (one vector), and a 16 x 16 transpose of the words puts
// pair p of the 16 rows in one vector, stored whole (the row-at-a-time scatter below, left for
// the last k < 32, was a fifth of a bf16 training step's GEMM time outside the kernel).
template <size_t R>
XG_BF16_TARGET void pack_pairs_k_contiguous(const float* src, size_t ld, size_t rows, size_t kc,
                                            uint32_t* panel) {
  size_t k0 = 0;
  for (; k0 + 32 <= kc; k0 += 32)
    for (size_t r0 = 0; r0 < R; r0 += 16) {
      __m512 v[16];
      for (size_t r = 0; r < 16; ++r) {
        v[r] = _mm512_setzero_ps();
        if (r0 + r >= rows) continue;
        const float* s = src + (r0 + r) * ld + k0;
        v[r] = (__m512)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + 16), _mm512_loadu_ps(s));
      }
      detail::transpose16x16(v);
      const __mmask16 m = first_lanes(R - r0);
      for (size_t q = 0; q < 16; ++q) _mm512_mask_storeu_ps(panel + (k0 / 2 + q) * R + r0, m, v[q]);
    }
  if (k0 == kc) return;
  src += k0;
  panel += k0 / 2 * R;
  kc -= k0;
  const size_t kp = pairs(kc);
  for (size_t r = 0; r < R; ++r) {
    if (r >= rows) {
      for (size_t p = 0; p < kp; ++p) panel[p * R + r] = 0;
      continue;
    }
    const float* s = src + r * ld;
    for (size_t k = 0; k < kc; k += 32) {
      const size_t n = kc - k;
      const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(n), s + k);
      const __m512 hi = _mm512_maskz_loadu_ps(first_lanes(n > 16 ? n - 16 : 0), s + k + 16);
      alignas(64) uint32_t words[16];
      _mm512_store_si512(words, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));  // already in pair order
      const size_t np = std::min<size_t>(16, (n + 1) / 2);
      for (size_t q = 0; q < np; ++q) panel[(k / 2 + q) * R + r] = words[q];
    }
  }
}

template <size_t R>
void pack_pairs_k_contiguous(const uint16_t* src, size_t ld, size_t rows, size_t kc,
                             uint32_t* panel) {
  const size_t kp = pairs(kc);
  for (size_t r = 0; r < R; ++r)
    for (size_t p = 0; p < kp; ++p) {
      uint32_t w = 0;
      if (r < rows) {
        const uint16_t* s = src + r * ld + 2 * p;
        w = uint32_t(s[0]) | (2 * p + 1 < kc ? uint32_t(s[1]) << 16 : 0u);
      }
      panel[p * R + r] = w;
    }
}

// C tile (ROWS x NR) = alpha * a_panel * b_panel + beta * C tile (+ bias), as gemm.cpp's
// micro_kernel: only the first mr x nr entries are stored.
template <size_t ROWS>
XG_BF16_TARGET void micro_kernel(size_t kc, const uint32_t* __restrict a,
                                 const uint32_t* __restrict b, float* c, size_t ldc, size_t mr,
                                 size_t nr, float alpha, float beta, const float* bias) {
  __m512 acc0[ROWS], acc1[ROWS];
#pragma GCC unroll 16
  for (size_t i = 0; i < ROWS; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
  for (size_t i = 0; i < mr; ++i) {
    __builtin_prefetch(c + i * ldc, 1);
    __builtin_prefetch(c + i * ldc + NR - 1, 1);
  }
  const size_t kp = pairs(kc);
#pragma GCC unroll 4
  for (size_t p = 0; p < kp; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(b + 16);
#pragma GCC unroll 16
    for (size_t i = 0; i < ROWS; ++i) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(int(a[i]));
      acc0[i] = _mm512_dpbf16_ps(acc0[i], ai, b0);
      acc1[i] = _mm512_dpbf16_ps(acc1[i], ai, b1);
    }
    a += MR;
    b += NR;
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  if (mr == ROWS && nr == NR) {
    const __m512 bias0 = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
    const __m512 bias1 = bias ? _mm512_loadu_ps(bias + 16) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (size_t i = 0; i < ROWS; ++i) {
      float* row = c + i * ldc;
      __m512 r0 = _mm512_mul_ps(acc0[i], va), r1 = _mm512_mul_ps(acc1[i], va);
      asm("" : "+v"(r0), "+v"(r1));  // rounded on its own, as gemm.cpp's keep_in_register there
      if (beta != 0.f) {
        r0 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(row), r0);
        r1 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(row + 16), r1);
      }
      if (bias) r0 = _mm512_add_ps(r0, bias0), r1 = _mm512_add_ps(r1, bias1);
      _mm512_storeu_ps(row, r0);
      _mm512_storeu_ps(row + 16, r1);
    }
    return;
  }
  alignas(64) float tile[ROWS * NR];
  for (size_t i = 0; i < ROWS; ++i) {
    _mm512_store_ps(tile + i * NR, _mm512_mul_ps(acc0[i], va));
    _mm512_store_ps(tile + i * NR + 16, _mm512_mul_ps(acc1[i], va));
  }
  for (size_t i = 0; i < mr; ++i)
    for (size_t j = 0; j < nr; ++j) {
      float& dst = c[i * ldc + j];
      dst = beta != 0.f ? tile[i * NR + j] + beta * dst : tile[i * NR + j];
      if (bias) dst += bias[j];
    }
}

struct Bf16Kernels {
  using Packed = uint32_t;
  static constexpr bool kReadsAInPlace = false;  // A goes into bf16 pairs as it is packed
  static constexpr size_t MR = gemm::MR, NR = gemm::NR, KC = gemm::KC, MC_MAX = gemm::MC_MAX,
                          NC = gemm::NC;
  static size_t depth(size_t kc) { return pairs(kc); }

  // Rows [i0, i0+mc) x cols [p0, p0+kc) of op(A) into MR-row panels.
  static void pack_a(bool ta, const float* A, size_t lda, size_t i0, size_t mc, size_t p0,
                     size_t kc, uint32_t* out) {
    if (ta) return pack_pairs_r_contiguous<MR>(A + p0 * lda + i0, lda, mc, kc, out);
    for (size_t ir = 0; ir < mc; ir += MR)
      pack_pairs_k_contiguous<MR>(A + (i0 + ir) * lda + p0, lda, std::min(MR, mc - ir), kc, out + ir * pairs(kc));
  }

  // Rows [p0, p0+kc) x cols [j0+jr_begin, j0+jr_end) of op(B) into NR-column panels.
  template <class BElem>
  static void pack_b(bool tb, const BElem* B, size_t ldb, size_t p0, size_t kc, size_t j0,
                     size_t nc, size_t jr_begin, size_t jr_end, uint32_t* out) {
    // Panel by panel, as gemm.cpp's pack_b and for the same reason
    for (size_t jr = jr_begin; jr < jr_end; jr += NR) {
      const size_t nr = std::min(NR, nc - jr);
      uint32_t* panel = out + jr * pairs(kc);
      if (tb)
        pack_pairs_k_contiguous<NR>(B + (j0 + jr) * ldb + p0, ldb, nr, kc, panel);
      else
        pack_pairs_r_contiguous<NR>(B + p0 * ldb + j0 + jr, ldb, nr, kc, panel);
    }
  }

  // The smallest kernel that covers mr rows.
  static void kernel(size_t kc, const uint32_t* a, const uint32_t* b, float* c, size_t ldc,
                     size_t mr, size_t nr, float alpha, float beta, const float* bias) {
    if (mr <= 2) return micro_kernel<2>(kc, a, b, c, ldc, mr, nr, alpha, beta, bias);
    if (mr <= 4) return micro_kernel<4>(kc, a, b, c, ldc, mr, nr, alpha, beta, bias);
    if (mr <= 8) return micro_kernel<8>(kc, a, b, c, ldc, mr, nr, alpha, beta, bias);
    micro_kernel<MR>(kc, a, b, c, ldc, mr, nr, alpha, beta, bias);
  }
};
#endif  // XG_HAVE_BF16_KERNEL

template <class BElem>
void run_bf16(const detail::Problem<BElem>& p) {
#if XG_HAVE_BF16_KERNEL
  if (bf16_kernel() == Bf16Kernel::Native)
    return detail::run<Bf16Kernels>(p, detail::threads_for(p.M, p.N, p.K));
#endif
  run_fallback(p);
}

}  // namespace

PackedB PackedB::bf16(bool trans_b, size_t K, size_t N, const float* B, size_t ldb) {
#if XG_HAVE_BF16_KERNEL
  if (bf16_kernel() == Bf16Kernel::Native) {
    PackedB out(Kind::Bf16Pairs, K, N, detail::packed_b_size<Bf16Kernels>(K, N));
    detail::pack_whole_b<Bf16Kernels>(trans_b, B, ldb, K, N, out.data_.get());
    return out;
  }
#endif
  PackedB fp32_panels = fp32(trans_b, K, N, B, ldb);
  detail::round_to_bf16(fp32_panels.floats(), fp32_panels.words_);  // zero padding stays zero
  fp32_panels.kind_ = Kind::Bf16Rounded;
  return fp32_panels;
}

void detail::run_bf16_packed(const detail::Problem<float>& p, const void* packed, bool pairs) {
#if XG_HAVE_BF16_KERNEL
  if (pairs)
    return detail::run<Bf16Kernels>(p, detail::threads_for(p.M, p.N, p.K), static_cast<const uint32_t*>(packed));
#endif
  if (pairs) throw std::logic_error("sgemm_packed: bf16 pairs packed by a build without the bf16 kernel");
  detail::run_bf16_rounded(p, static_cast<const float*>(packed));
}

bool bf16_native_available() {
  static const bool available = cpu_has_avx512_bf16();
  return available;
}

Bf16Kernel bf16_kernel() { return selected_kernel().load(); }

void set_bf16_kernel(Bf16Kernel k) {
  if (k == Bf16Kernel::Native && !bf16_native_available())
    throw std::invalid_argument("set_bf16_kernel(Native): this CPU lacks AVX512-BF16");
  selected_kernel().store(k);
}

void sgemm_bf16(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                const float* A, size_t lda, const float* B, size_t ldb, float beta, float* C,
                size_t ldc, const Epilogue& epilogue) {
  run_bf16(detail::Problem<float>{trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, epilogue});
}

void sgemm_bf16(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                const float* A, size_t lda, const uint16_t* B, size_t ldb, float beta, float* C,
                size_t ldc) {
  run_bf16(detail::Problem<uint16_t>{trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc});
}

}  // namespace xg::gemm
