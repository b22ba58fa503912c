// The int8 GEMM of dynamic quantization (quantize.hpp). Layouts, four k values per 32-bit word as
// AVX512-VNNI's vpdpbusd reads them (lane j: sum over t < 4 of a[4j + t] * b[4j + t], uint8 by
// int8, into int32):
//  - B (PackedB::int8): panels of NR = 32 columns; panel word (q, c) holds k = 4q..4q+3 of column
//    c (zero past K and past N); after the panels, each padded column's scale (float), then the
//    sum of its int8 values (int32, for the zero-point correction).
//  - A, quantized at run time: panels of MR rows; word (q, r) holds k = 4q..4q+3 of row r.
// A tile of MR x NR keeps its int32 sums in registers over the whole of K (no K blocking: the sums
// stay exact and are dequantized once). The kernel code carries a target attribute, so the file
// builds for any x86-64 and the VNNI instructions run only where the CPU reports them.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "autograd/kernels/gemm.hpp"
#include "autograd/kernels/gemm_driver.hpp"
#include "autograd/kernels/quantize.hpp"
#include "autograd/kernels/round_up.hpp"
#include "autograd/parallel.hpp"

#if defined(__x86_64__) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 9))
#define XG_HAVE_VNNI_KERNEL 1
#include <immintrin.h>
#define XG_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#else
#define XG_HAVE_VNNI_KERNEL 0
#endif

namespace xg::gemm {

namespace {

constexpr size_t MR = 12, NR = 32;  // 12 x 2 accumulators + 2 B vectors + 1 broadcast: 27 of 32 registers
// A column block of B panels, kept in L2 while every row panel passes: half the L2 (measured on a
// 2 MB L2 at K = 3072, 1 MB blocks ran 10% faster than 384 KB ones, which re-stream A 3x as often).
size_t block_bytes() {
  static const size_t bytes = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? size_t(l2) / 2 : size_t(512 * 1024);
  }();
  return bytes;
}

size_t quads(size_t K) { return (K + 3) / 4; }

// Where the parts of a PackedB::int8 lie.
struct Int8Layout {
  size_t K, N, kq, n_panels;
  size_t panel_bytes() const { return kq * NR * 4; }
  size_t padded_n() const { return n_panels * NR; }
  size_t words() const { return n_panels * kq * NR + 2 * padded_n(); }
  explicit Int8Layout(size_t K_, size_t N_) : K(K_), N(N_), kq(quads(K_)), n_panels((N_ + NR - 1) / NR) {}
};

struct Int8View {  // a PackedB::int8's parts
  const int8_t* panels;
  const float* scales;
  const int32_t* sums;
  Int8View(const Int8Layout& l, const void* words)
      : panels(static_cast<const int8_t*>(words)),
        scales(reinterpret_cast<const float*>(panels + l.n_panels * l.panel_bytes())),
        sums(reinterpret_cast<const int32_t*>(scales + l.padded_n())) {}
};

// The largest K whose int32 sums cannot overflow: 255 x 128 x K < 2^31.
constexpr size_t kMaxK = 65793;
void check_depth(size_t K, const char* what) {
  if (K > kMaxK)
    throw std::invalid_argument(fmt::format("[{}] K = {} exceeds {}, the depth whose int32 sums of uint8 x int8 "
                                            "products cannot overflow", what, K, kMaxK));
}

// Column c's K int8 values (contiguous) into panel layout.
void place_column(const int8_t* column, size_t K, size_t c, const Int8Layout& l, int8_t* panels) {
  int8_t* panel = panels + (c / NR) * l.panel_bytes() + (c % NR) * 4;
  for (size_t k = 0; k < K; ++k) panel[(k / 4) * NR * 4 + k % 4] = column[k];
}

// A row's scale and zero point from its range [lo, hi] (lo <= 0 <= hi, finite), with the multiplier
// 1 / scale its values are quantized by: one definition for both row quantizers, whose bytes must
// agree. A range whose reciprocal is not finite (narrower than ~1e-36: subnormal activations) is
// quantized as all zero (multiplier 0, scale 1); the range is taken in double, so a row spanning
// more than a float holds still gets a finite scale.
struct RowParams {
  RowQuantization rq;
  float inverse;
};
RowParams row_params(float lo, float hi) {
  const float scale = float((double(hi) - double(lo)) / 255.0), inverse = 1.f / scale;
  if (!(scale > 0.f) || !std::isfinite(inverse)) return {{1.f, 0}, 0.f};
  return {{scale, int32_t(std::clamp(std::nearbyint(-lo * inverse), 0.f, 255.f))}, inverse};
}
RowQuantization non_finite_row() { return {std::numeric_limits<float>::quiet_NaN(), 0}; }

// What a tile's sums become.
struct TileOut {
  size_t rows, cols;  // of the tile that are real (<= MR, <= NR)
  int32_t* raw;       // igemm: the sums as they are (row stride ldc); else dequantized into c
  float* c;
  size_t ldc;
  const float* row_scale;  // alpha * the row's activation scale, per row of the tile
  const int32_t* row_zero;
  const float* col_scale;  // per column of the tile (padded: NR readable)
  const int32_t* col_sum;
  const float* bias;  // or null; `cols` readable
  float beta;
};

// The portable kernel's dequantizing store of one sum.
inline float dequantize(int32_t sum, int32_t zero, int32_t col_sum, float row_scale, float col_scale) {
  return float(sum - zero * col_sum) * row_scale * col_scale;
}

void store_portable(const int32_t (&acc)[MR][NR], const TileOut& t) {
  for (size_t r = 0; r < t.rows; ++r)
    for (size_t j = 0; j < t.cols; ++j) {
      if (t.raw) {
        t.raw[r * t.ldc + j] = acc[r][j];
        continue;
      }
      float v = dequantize(acc[r][j], t.row_zero[r], t.col_sum[j], t.row_scale[r], t.col_scale[j]);
      float& out = t.c[r * t.ldc + j];
      if (t.beta != 0.f) v += t.beta * out;
      if (t.bias) v += t.bias[j];
      out = v;
    }
}

void tile_portable(size_t kq, const uint8_t* a, const int8_t* b, const TileOut& t) {
  int32_t acc[MR][NR] = {};
  for (size_t q = 0; q < kq; ++q) {
    const uint8_t* aq = a + q * MR * 4;
    const int8_t* bq = b + q * NR * 4;
    for (size_t r = 0; r < t.rows; ++r)
      for (size_t j = 0; j < NR; ++j) {
        int32_t s = 0;
        for (size_t u = 0; u < 4; ++u) s += int32_t(aq[r * 4 + u]) * int32_t(bq[j * 4 + u]);
        acc[r][j] += s;
      }
  }
  store_portable(acc, t);
}

#if XG_HAVE_VNNI_KERNEL
bool cpu_has_vnni() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vnni");
}

XG_VNNI_TARGET inline __mmask16 lanes(size_t n) {
  return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
}

// One row's two vectors of sums, stored as t says.
XG_VNNI_TARGET inline void store_row(__m512i s0, __m512i s1, size_t r, const TileOut& t) {
  const __mmask16 m0 = lanes(t.cols), m1 = lanes(t.cols > 16 ? t.cols - 16 : 0);
  if (t.raw) {
    _mm512_mask_storeu_epi32(t.raw + r * t.ldc, m0, s0);
    _mm512_mask_storeu_epi32(t.raw + r * t.ldc + 16, m1, s1);
    return;
  }
  const __m512i zero = _mm512_set1_epi32(t.row_zero[r]);
  const __m512 rs = _mm512_set1_ps(t.row_scale[r]);
  __m512 v0 = _mm512_cvtepi32_ps(_mm512_sub_epi32(s0, _mm512_mullo_epi32(zero, _mm512_loadu_si512(t.col_sum))));
  __m512 v1 = _mm512_cvtepi32_ps(_mm512_sub_epi32(s1, _mm512_mullo_epi32(zero, _mm512_loadu_si512(t.col_sum + 16))));
  v0 = _mm512_mul_ps(_mm512_mul_ps(v0, rs), _mm512_loadu_ps(t.col_scale));
  v1 = _mm512_mul_ps(_mm512_mul_ps(v1, rs), _mm512_loadu_ps(t.col_scale + 16));
  float* c = t.c + r * t.ldc;
  if (t.beta != 0.f) {
    const __m512 beta = _mm512_set1_ps(t.beta);
    v0 = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(m0, c), v0);
    v1 = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(m1, c + 16), v1);
  }
  if (t.bias) {
    v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, t.bias));
    v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, t.bias + 16));
  }
  _mm512_mask_storeu_ps(c, m0, v0);
  _mm512_mask_storeu_ps(c + 16, m1, v1);
}

// 16 values as uint8: clamp(nearest-even(v * inverse) + zero point, 0, 255).
XG_VNNI_TARGET inline __m128i quantize16(__m512 v, __m512 inverse, __m512i zp) {
  const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(v, inverse)), zp);  // nearest even (MXCSR)
  return _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(q, _mm512_setzero_si512()), _mm512_set1_epi32(255)));
}

// quantize_row_u8 (the same values: one float multiply, round to nearest even, clamp), writing
// quad q of the row (k = 4q..4q+3) at out + q * quad_stride: a row of A's panels, or (stride 4)
// a plain row. Bytes past n up to the next quad are zero.
XG_VNNI_TARGET RowQuantization quantize_row_avx512(const float* x, size_t n, uint8_t* out, size_t quad_stride) {
  const __m512 zero = _mm512_setzero_ps();
  __m512 lo = zero, hi = zero, nonfinite = zero;  // x * 0 is NaN for NaN and infinities alone
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    lo = _mm512_min_ps(lo, v);
    hi = _mm512_max_ps(hi, v);
    nonfinite = _mm512_add_ps(nonfinite, _mm512_mul_ps(v, zero));
  }
  const __mmask16 tail = lanes(n - i);
  if (i < n) {
    const __m512 v = _mm512_maskz_loadu_ps(tail, x + i);  // zeros elsewhere: inside [lo, hi] already
    lo = _mm512_min_ps(lo, v);
    hi = _mm512_max_ps(hi, v);
    nonfinite = _mm512_add_ps(nonfinite, _mm512_mul_ps(v, zero));
  }
  // lane by lane (GCC 12 warns of an uninitialised value inside _mm512_reduce_*_ps)
  alignas(64) float los[16], his[16], nans[16];
  _mm512_store_ps(los, lo);
  _mm512_store_ps(his, hi);
  _mm512_store_ps(nans, nonfinite);
  float low = 0.f, high = 0.f;
  bool finite = true;
  for (size_t l = 0; l < 16; ++l) {
    low = std::min(low, los[l]);
    high = std::max(high, his[l]);
    finite = finite && !std::isnan(nans[l]);
  }
  const RowParams params = finite ? row_params(low, high) : RowParams{non_finite_row(), 0.f};  // multiplier 0: every q zero
  const RowQuantization rq = params.rq;
  const __m512 inverse = _mm512_set1_ps(params.inverse);
  const __m512i zp = _mm512_set1_epi32(rq.zero_point);
  for (i = 0; i + 16 <= n; i += 16) {
    alignas(16) uint32_t quad[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(quad), quantize16(_mm512_loadu_ps(x + i), inverse, zp));
    for (size_t t = 0; t < 4; ++t) std::memcpy(out + (i / 4 + t) * quad_stride, quad + t, 4);
  }
  if (i < n) {
    alignas(16) uint8_t bytes[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(bytes), quantize16(_mm512_maskz_loadu_ps(tail, x + i), inverse, zp));
    for (size_t k = i; k < round_up(n, 4); ++k) out[(k / 4) * quad_stride + k % 4] = k < n ? bytes[k - i] : 0;
  }
  return rq;
}

template <size_t R>
XG_VNNI_TARGET void tile_vnni_rows(size_t kq, const uint8_t* a, const int8_t* b, const TileOut& t) {
  __m512i acc0[R], acc1[R];
#pragma GCC unroll 12
  for (size_t r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm512_setzero_si512();
  for (size_t q = 0; q < kq; ++q) {
    const __m512i b0 = _mm512_load_si512(b + q * NR * 4), b1 = _mm512_load_si512(b + q * NR * 4 + 64);
    const uint8_t* aq = a + q * MR * 4;
#pragma GCC unroll 12
    for (size_t r = 0; r < R; ++r) {
      int32_t word;
      std::memcpy(&word, aq + r * 4, 4);
      const __m512i av = _mm512_set1_epi32(word);
      acc0[r] = _mm512_dpbusd_epi32(acc0[r], av, b0);
      acc1[r] = _mm512_dpbusd_epi32(acc1[r], av, b1);
    }
  }
#pragma GCC unroll 12
  for (size_t r = 0; r < R; ++r) store_row(acc0[r], acc1[r], r, t);
}

template <size_t... R>
void tile_vnni_dispatch(size_t rows, size_t kq, const uint8_t* a, const int8_t* b, const TileOut& t,
                        std::index_sequence<R...>) {
  using Fn = void (*)(size_t, const uint8_t*, const int8_t*, const TileOut&);
  static constexpr Fn kTiles[] = {&tile_vnni_rows<R + 1>...};
  kTiles[rows - 1](kq, a, b, t);
}

void tile_vnni(size_t kq, const uint8_t* a, const int8_t* b, const TileOut& t) {
  tile_vnni_dispatch(t.rows, kq, a, b, t, std::make_index_sequence<MR>{});
}
#else
bool cpu_has_vnni() { return false; }
RowQuantization quantize_row_avx512(const float*, size_t, uint8_t*, size_t) {
  throw std::logic_error("quantize_row_avx512: not in this build");
}
void tile_vnni(size_t kq, const uint8_t* a, const int8_t* b, const TileOut& t) { tile_portable(kq, a, b, t); }
#endif

std::atomic<Int8Kernel>& selected_kernel() {
  static std::atomic<Int8Kernel> k{int8_vnni_available() ? Int8Kernel::Vnni : Int8Kernel::Fallback};
  return k;
}

using Tile = void (*)(size_t, const uint8_t*, const int8_t*, const TileOut&);
Tile tile_kernel() { return selected_kernel().load() == Int8Kernel::Vnni ? &tile_vnni : &tile_portable; }

// A, quantized into panels: the caller's buffers, which the workers fill and read during a call.
struct QuantizedA {
  std::vector<uint8_t, xsimd::aligned_allocator<uint8_t, 64>> panels;
  std::vector<float> scale;  // per row: alpha * the row's scale (int8 GEMM) or 1 (igemm)
  std::vector<int32_t> zero;
};
QuantizedA& a_buffers() {
  thread_local QuantizedA buffers;
  return buffers;
}
size_t a_panel_bytes(size_t kq) { return kq * MR * 4; }

// Row i's K bytes into its panel.
void place_row(const uint8_t* row, size_t K, size_t i, size_t kq, uint8_t* panels) {
  uint8_t* out = panels + (i / MR) * a_panel_bytes(kq) + (i % MR) * 4;
  size_t k = 0;
  for (; k + 4 <= K; k += 4) std::memcpy(out + (k / 4) * MR * 4, row + k, 4);
  for (; k < round_up(K, 4); ++k) out[(k / 4) * MR * 4 + k % 4] = k < K ? row[k] : 0;
}

// Every tile of C: rows in panels [p0, p1) x columns in panels [c0, c1), column blocks of B kept in
// L2 while each row panel passes; then the activation on the rows done, as the fp32 GEMM's epilogue.
struct Run {
  size_t M, kq;
  const QuantizedA* a;
  Int8Layout layout;
  Int8View b;
  int32_t* raw;  // igemm
  float* c;
  size_t ldc;
  float beta;
  const Epilogue* epilogue;

  void tiles(size_t p0, size_t p1, size_t c0, size_t c1, Tile kernel) const {
    const size_t block = std::max<size_t>(1, block_bytes() / layout.panel_bytes());
    for (size_t cb = c0; cb < c1; cb += block) {
      const size_t cb_end = std::min(c1, cb + block);
      for (size_t p = p0; p < p1; ++p) {
        const size_t i0 = p * MR, rows = std::min(MR, M - i0);
        for (size_t cp = cb; cp < cb_end; ++cp) {
          const size_t j0 = cp * NR, cols = std::min(NR, layout.N - j0);
          const TileOut out{rows,
                            cols,
                            raw ? raw + i0 * ldc + j0 : nullptr,
                            c ? c + i0 * ldc + j0 : nullptr,
                            ldc,
                            a->scale.data() + i0,
                            a->zero.data() + i0,
                            b.scales + j0,
                            b.sums + j0,
                            epilogue && epilogue->bias ? epilogue->bias + j0 : nullptr,
                            beta};
          kernel(kq, a->panels.data() + p * a_panel_bytes(kq), b.panels + cp * layout.panel_bytes(), out);
        }
        if (epilogue && epilogue->activation) {
          const size_t j0 = cb * NR, j1 = std::min(layout.N, cb_end * NR);
          for (size_t i = i0; i < i0 + rows; ++i) vec::unary(*epilogue->activation, c + i * ldc + j0, c + i * ldc + j0, j1 - j0);
        }
      }
    }
  }

  // Threads take column panels when there are enough of them, else row panels.
  void all(int threads) const {
    const size_t m_panels = (M + MR - 1) / MR, T = size_t(std::max(1, threads));
    const Tile kernel = tile_kernel();
    if (T == 1) return tiles(0, m_panels, 0, layout.n_panels, kernel);
    const bool by_columns = layout.n_panels >= 2 * T || layout.n_panels >= m_panels;
    const size_t units = by_columns ? layout.n_panels : m_panels, tasks = std::min(T, units);
    parallel_for(tasks, [&](size_t t) {
      const size_t u0 = t * units / tasks, u1 = (t + 1) * units / tasks;
      if (by_columns)
        tiles(0, m_panels, u0, u1, kernel);
      else
        tiles(u0, u1, 0, layout.n_panels, kernel);
    });
  }
};

// quantize_channel_s8, naming `what` (the caller and the channel) in its error.
float quantize_channel(const float* w, size_t n, size_t stride, int8_t* q, const std::string& what) {
  float amax = 0.f;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(w[i * stride]))
      throw std::invalid_argument(fmt::format("{} holds {} at input {}: int8 weights need finite values", what, w[i * stride], i));
    amax = std::max(amax, std::abs(w[i * stride]));
  }
  // all zero, or too small for a finite reciprocal (below ~4e-37): every q zero
  const float scale = amax / 127.f, inverse = 1.f / scale;
  if (!(scale > 0.f) || !std::isfinite(inverse)) {
    std::fill(q, q + n, int8_t(0));
    return 1.f;
  }
  for (size_t i = 0; i < n; ++i) q[i] = int8_t(std::clamp(std::nearbyint(w[i * stride] * inverse), -127.f, 127.f));
  return scale;
}

}  // namespace

namespace {
// The portable quantizer (quantize_row_u8's definition).
RowQuantization quantize_row_portable(const float* x, size_t n, uint8_t* q) {
  float lo = 0.f, hi = 0.f;
  bool finite = true;
  for (size_t i = 0; i < n; ++i) {
    finite = finite && std::isfinite(x[i]);
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (!finite) {
    std::fill(q, q + n, uint8_t(0));
    return non_finite_row();
  }
  const RowParams params = row_params(lo, hi);  // multiplier 0 for an all-zero row: every q zero
  const float zero = float(params.rq.zero_point);
  for (size_t i = 0; i < n; ++i) q[i] = uint8_t(std::clamp(std::nearbyint(x[i] * params.inverse) + zero, 0.f, 255.f));
  return params.rq;
}

// Row i of A quantized straight into its panel.
RowQuantization quantize_into_panel(const float* x, size_t K, size_t i, size_t kq, uint8_t* panels, std::vector<uint8_t>& row) {
  uint8_t* out = panels + (i / MR) * a_panel_bytes(kq) + (i % MR) * 4;
  if (selected_kernel().load() == Int8Kernel::Vnni) return quantize_row_avx512(x, K, out, MR * 4);
  row.resize(K);
  const RowQuantization rq = quantize_row_portable(x, K, row.data());
  place_row(row.data(), K, i, kq, panels);
  return rq;
}
}  // namespace

RowQuantization quantize_row_u8(const float* x, size_t n, uint8_t* q) {
  if (selected_kernel().load() != Int8Kernel::Vnni) return quantize_row_portable(x, n, q);
  std::vector<uint8_t> padded(round_up(n, 4));
  const RowQuantization rq = quantize_row_avx512(x, n, padded.data(), 4);
  std::copy(padded.begin(), padded.begin() + std::ptrdiff_t(n), q);
  return rq;
}

float quantize_channel_s8(const float* w, size_t n, size_t stride, int8_t* q) {
  return quantize_channel(w, n, stride, q, "[quantize_channel_s8] the channel");
}

PackedB PackedB::int8(bool trans_b, size_t K, size_t N, const float* B, size_t ldb) {
  check_depth(K, "PackedB::int8");
  const Int8Layout l(K, N);
  PackedB out(Kind::Int8, K, N, l.words());
  std::memset(out.data_.get(), 0, out.words_ * 4);
  auto* panels = reinterpret_cast<int8_t*>(out.data_.get());
  const Int8View view(l, panels);
  auto* scales = const_cast<float*>(view.scales);
  auto* sums = const_cast<int32_t*>(view.sums);
  for (size_t j = 0; j < l.padded_n(); ++j) scales[j] = 1.f;
  std::vector<int8_t> column(K);
  for (size_t j = 0; j < N; ++j) {  // column j of op(B): B[k * ldb + j], or B[j * ldb + k] when trans_b
    const float* first = trans_b ? B + j * ldb : B + j;
    scales[j] = quantize_channel(first, K, trans_b ? 1 : ldb, column.data(), fmt::format("[PackedB::int8] output channel {}", j));
    int32_t sum = 0;
    for (size_t k = 0; k < K; ++k) sum += column[k];
    sums[j] = sum;
    place_column(column.data(), K, j, l, panels);
  }
  return out;
}

void detail::run_int8_packed(const Problem<float>& p, const void* packed) {
  if (p.M == 0 || p.N == 0) return;
  if (p.K == 0) return scale_c(p);
  const Int8Layout l(p.K, p.N);
  // op(A) row by row: a transposed A is copied out first (no layer here passes one).
  std::vector<float> transposed;
  const float* A = p.A;
  size_t lda = p.lda;
  if (p.ta) {
    transposed.resize(p.M * p.K);
    for (size_t k = 0; k < p.K; ++k)
      for (size_t i = 0; i < p.M; ++i) transposed[i * p.K + k] = p.A[k * p.lda + i];
    A = transposed.data();
    lda = p.K;
  }
  const size_t m_panels = (p.M + MR - 1) / MR;
  QuantizedA& qa = a_buffers();
  qa.panels.resize(m_panels * a_panel_bytes(l.kq));
  qa.scale.resize(m_panels * MR);
  qa.zero.assign(m_panels * MR, 0);
  for (size_t i = p.M; i < m_panels * MR; ++i)  // the last panel's rows past M: computed, never stored
    for (size_t q = 0; q < l.kq; ++q) std::memset(qa.panels.data() + (i / MR) * a_panel_bytes(l.kq) + q * MR * 4 + (i % MR) * 4, 0, 4);
  const size_t threads = size_t(std::max(1, threads_for(p.M, p.N, p.K)));
  auto quantize_rows = [&](size_t i0, size_t i1) {
    std::vector<uint8_t> row;
    for (size_t i = i0; i < i1; ++i) {
      const RowQuantization rq = quantize_into_panel(A + i * lda, p.K, i, l.kq, qa.panels.data(), row);
      qa.scale[i] = p.alpha * rq.scale;
      qa.zero[i] = rq.zero_point;
    }
  };
  const Run run{p.M, l.kq, &qa, l, Int8View(l, packed), nullptr, p.C, p.ldc, p.beta, &p.epilogue};
  // Many rows: each thread quantizes its row panels and multiplies them by all of B, one wake-up
  // of the pool per GEMM (quantizing, then sharing out columns, took two, and the pool's waits were
  // a tenth of BERT-mini's int8 forward at 8 x 128).
  if (threads > 1 && m_panels >= 8 * threads) {
    parallel_for(threads, [&](size_t t) {
      const size_t p0 = t * m_panels / threads, p1 = (t + 1) * m_panels / threads;
      quantize_rows(p0 * MR, std::min(p.M, p1 * MR));
      run.tiles(p0, p1, 0, l.n_panels, tile_kernel());
    });
    return;
  }
  // Few rows: quantized on one thread below some 64K values (about what waking the pool costs),
  // then the threads share out B's column panels (each streams half of B).
  const size_t tasks = p.M * p.K < (size_t(1) << 16) ? 1 : std::min(threads, p.M);
  if (tasks == 1)
    quantize_rows(0, p.M);
  else
    parallel_for(tasks, [&](size_t t) { quantize_rows(t * p.M / tasks, (t + 1) * p.M / tasks); });
  run.all(int(threads));
}

void igemm_u8s8(size_t M, size_t N, size_t K, const uint8_t* A, size_t lda, const int8_t* B, size_t ldb, int32_t* C,
                size_t ldc) {
  if (M == 0 || N == 0) return;
  check_depth(K, "igemm_u8s8");
  const Int8Layout l(K, N);
  std::vector<uint32_t, xsimd::aligned_allocator<uint32_t, 64>> words(l.words(), 0);
  auto* panels = reinterpret_cast<int8_t*>(words.data());
  for (size_t j = 0; j < N; ++j) place_column(B + j * ldb, K, j, l, panels);
  const size_t m_panels = (M + MR - 1) / MR;
  QuantizedA qa;  // the caller's rows as they are: scale 1, zero point 0 (not read: raw sums out)
  qa.panels.assign(m_panels * a_panel_bytes(l.kq), 0);
  qa.scale.assign(m_panels * MR, 1.f);
  qa.zero.assign(m_panels * MR, 0);
  for (size_t i = 0; i < M; ++i) place_row(A + i * lda, K, i, l.kq, qa.panels.data());
  const Run run{M, l.kq, &qa, l, Int8View(l, words.data()), C, nullptr, ldc, 0.f, nullptr};
  run.all(detail::threads_for(M, N, K));
}

void igemm_u8s8_reference(size_t M, size_t N, size_t K, const uint8_t* A, size_t lda, const int8_t* B, size_t ldb,
                          int32_t* C, size_t ldc) {
  for (size_t i = 0; i < M; ++i)
    for (size_t j = 0; j < N; ++j) {
      int64_t s = 0;
      for (size_t k = 0; k < K; ++k) s += int64_t(A[i * lda + k]) * int64_t(B[j * ldb + k]);
      C[i * ldc + j] = int32_t(s);
    }
}

bool int8_vnni_available() {
  static const bool available = cpu_has_vnni();
  return available;
}

Int8Kernel int8_kernel() { return selected_kernel().load(); }

void set_int8_kernel(Int8Kernel k) {
  if (k == Int8Kernel::Vnni && !int8_vnni_available())
    throw std::runtime_error("set_int8_kernel: this CPU lacks AVX512-VNNI");
  selected_kernel().store(k);
}

}  // namespace xg::gemm
