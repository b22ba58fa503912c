// Blocked attention forward and backward (see flash_attention.hpp). A task is one sequence and
// one head: it copies that head's queries (pre-scaled), keys, values (and in the backward the
// output gradient) into zero-padded scratch once, both row-major and transposed as the block
// products need them, then walks blocks of kBlock queries x kBlock keys. Every product is the
// same register-tiled kernel, C (+)= A B with B's rows contiguous.
#include "autograd/kernels/flash_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "autograd/kernels/online_softmax.hpp"
#include "autograd/kernels/round_up.hpp"
#include "autograd/kernels/transpose.hpp"
#include "autograd/parallel.hpp"
#include "autograd/xt.hpp"

namespace xg::attn {
namespace {

constexpr size_t W = kSimdWidth;
constexpr size_t kRows = 4;     // rows per register tile
// Vectors per register tile row: kRows x kTile accumulators, kTile B vectors and a broadcast must
// fit the register file (32 with AVX-512; AVX2's 16 hold 4 x 3, and 4 x 4 spilled the
// accumulators to the stack inside the k loop).
constexpr size_t kTile = W >= 16 ? 4 : 3;
constexpr size_t kBlock = 64;   // queries and keys per block
static_assert(kBlock % W == 0 && kBlock % kRows == 0);

inline fbatch load(const float* p) { return fbatch::load_unaligned(p); }

// c[kRows x NC*W] += a[kRows x kdim] b[kdim x NC*W] (= without Accumulate: c's old values are
// not read, so it needs no zeroing first); with TransA, a is stored transposed (element (r, kk)
// at a[kk * lda + r]), which the broadcasts read as cheaply. Every loop over the tile is unrolled:
// with the loops rolled, GCC kept the accumulators in a stack array outside the kk loop (zeroed,
// then copied there and back), and bench_attention at T = 128 ran 10-12% slower.
template <size_t NC, bool TransA, bool Accumulate>
void mm_tile(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t kdim) {
  fbatch acc[kRows][NC];
#pragma GCC unroll 4
  for (size_t r = 0; r < kRows; ++r)
#pragma GCC unroll 4
    for (size_t j = 0; j < NC; ++j) acc[r][j] = Accumulate ? load(c + r * ldc + j * W) : fbatch(0.f);
  for (size_t kk = 0; kk < kdim; ++kk) {
    fbatch bv[NC];
#pragma GCC unroll 4
    for (size_t j = 0; j < NC; ++j) {
      bv[j] = load(b + kk * ldb + j * W);
      keep_in_register(bv[j]);
    }
#pragma GCC unroll 4
    for (size_t r = 0; r < kRows; ++r) {
      const fbatch av(TransA ? a[kk * lda + r] : a[r * lda + kk]);
#pragma GCC unroll 4
      for (size_t j = 0; j < NC; ++j) acc[r][j] = xsimd::fma(av, bv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 4
  for (size_t r = 0; r < kRows; ++r)
#pragma GCC unroll 4
    for (size_t j = 0; j < NC; ++j) acc[r][j].store_unaligned(c + r * ldc + j * W);
}

// c[m x n] += a[m x kdim] b[kdim x n] (a transposed with TransA; = without Accumulate); m a
// multiple of kRows, n of W.
template <bool TransA = false, bool Accumulate = true>
void mm_acc(size_t m, size_t n, size_t kdim, const float* a, size_t lda, const float* b, size_t ldb, float* c,
            size_t ldc) {
  const size_t vecs = n / W;
  for (size_t r = 0; r < m; r += kRows) {
    const float* ar = TransA ? a + r : a + r * lda;
    float* cr = c + r * ldc;
    size_t v = 0;
    for (; v + kTile <= vecs; v += kTile)
      mm_tile<kTile, TransA, Accumulate>(ar, lda, b + v * W, ldb, cr + v * W, ldc, kdim);
    switch (vecs - v) {  // fewer than kTile left
      case 3: mm_tile<3, TransA, Accumulate>(ar, lda, b + v * W, ldb, cr + v * W, ldc, kdim); break;
      case 2: mm_tile<2, TransA, Accumulate>(ar, lda, b + v * W, ldb, cr + v * W, ldc, kdim); break;
      case 1: mm_tile<1, TransA, Accumulate>(ar, lda, b + v * W, ldb, cr + v * W, ldc, kdim); break;
      default: break;
    }
  }
}

// lowbias32 (Chris Wellons' integer hash): a full-avalanche 32-bit mix, on one value or on W lanes.
using ubatch = xsimd::batch<uint32_t>;
static_assert(ubatch::size == W);
template <class U>
inline U mix32(U x) {
  x ^= x >> 16; x *= U(0x7feb352dU); x ^= x >> 15; x *= U(0x846ca68bU); x ^= x >> 16;
  return x;
}

// Per-row dropout: mult[j] = 1/(1-p) where key j is kept, else 0, for keys [k0, k0 + kBlock).
// Key j of a row is kept when a hash of (row, j) is >= p * 2^32. The row's two keys keep rows
// whose first keys differ by a multiple of the key step from drawing shifted copies of one mask.
struct RowDropout {
  uint32_t threshold = 0;
  bool drop_all = false;  // p == 1: no 32-bit hash reaches 2^32
  float keep_scale = 1.f;
  uint64_t seed = 0;
  RowDropout(float p, uint64_t s) : seed(s) {
    const uint64_t t = uint64_t(double(p) * 4294967296.0);
    drop_all = t > 0xffffffffULL;
    threshold = uint32_t(std::min<uint64_t>(t, 0xffffffffULL));
    keep_scale = p >= 1.f ? 0.f : 1.f / (1.f - p);
  }
  struct RowKey { uint32_t a, b; };
  RowKey row_key(size_t seq, size_t head, size_t i) const {
    const uint32_t lo = uint32_t(seed), hi = uint32_t(seed >> 32);
    const uint32_t a = mix32(lo ^ mix32(hi + uint32_t(seq) * 0x9E3779B9U + uint32_t(head) * 0x85EBCA6BU) ^
                             mix32(uint32_t(i) * 0xC2B2AE35U + 0x27D4EB2FU));
    return {a, mix32(a + 0x9E3779B9U)};
  }
  static constexpr uint32_t kKeyStep = 0x165667B1U;
  template <class U>
  static U key_hash(U a, U b, U j) { return mix32(mix32(a + j * U(kKeyStep)) ^ b); }
  bool keeps(RowKey row, size_t j) const {
    return !drop_all && key_hash<uint32_t>(row.a, row.b, uint32_t(j)) >= threshold;
  }
  // key_hash over W keys at once (the forward and backward draw ~B h T^2 of them per layer).
  void fill(RowKey row, size_t k0, float* mult) const {
    if (drop_all) {
      std::fill(mult, mult + kBlock, 0.f);
      return;
    }
    alignas(64) uint32_t lanes[W];
    for (size_t l = 0; l < W; ++l) lanes[l] = uint32_t(l);
    const ubatch lane = ubatch::load_aligned(lanes), va(row.a), vb(row.b), vthreshold(threshold);
    uint32_t scale_bits;
    std::memcpy(&scale_bits, &keep_scale, sizeof scale_bits);
    const ubatch kept(scale_bits), dropped(0u);
    for (size_t j = 0; j < kBlock; j += W) {
      const ubatch h = key_hash<ubatch>(va, vb, ubatch(uint32_t(k0 + j)) + lane);
      xsimd::bitwise_cast<fbatch>(xsimd::select(h >= vthreshold, kept, dropped)).store_unaligned(mult + j);
    }
  }
};

// A task's copies of one head of one sequence, zero-padded to whole blocks (rows) and whole
// SIMD vectors (head_dim). Reused across tasks on a thread.
struct Scratch {
  std::vector<float> qs, kt, vb, kb, vt, dob, dq, mask, row_max, row_log_sum, delta, s, dp, tr, o, dk, dv, mult, m, l;
  static void zero(std::vector<float>& v, size_t n) { v.assign(n, 0.f); }
};

// One task's sequence: its rows (of keys, or `queries`) and sizes.
struct Geometry {
  size_t row0, T, Tp, ldt, hd, hdp, ld;
  // ldt, the row stride of transposed copies, is one vector more than Tp: a power-of-two stride
  // would map a block's rows onto a few cache sets and evict them from L1 (measured: 30% slower).
  Geometry(const AttentionProblem& p, size_t seq, bool queries = false)
      : row0(queries ? p.first_query_row(seq) : p.first_row(seq)), T(queries ? p.query_length(seq) : p.length(seq)),
        Tp(round_up(std::max<size_t>(T, 1), kBlock)), ldt(Tp + W), hd(p.head_dim), hdp(round_up(p.head_dim, W)),
        ld(p.width()) {}
  // Copies head h of the sequence from x (row stride ld) into dst (Tp x hdp), times scale, with
  // zeros in the padding (rows past T, columns past hd) and nowhere else written twice.
  void rows(const float* x, size_t h, float scale, std::vector<float>& dst_buffer) const {
    dst_buffer.resize(Tp * hdp);
    float* dst = dst_buffer.data();
    for (size_t i = 0; i < T; ++i) {
      const float* src = x + (row0 + i) * ld + h * hd;
      for (size_t d = 0; d < hd; ++d) dst[i * hdp + d] = src[d] * scale;
      std::fill(dst + i * hdp + hd, dst + (i + 1) * hdp, 0.f);
    }
    std::fill(dst + T * hdp, dst + Tp * hdp, 0.f);
  }
  // The same head transposed into dst (hd x Tp, row stride ldt; columns T..Tp zeros), 16 x 16
  // blocks through registers where AVX-512 allows, 8 x 8 with AVX: element by element, the
  // strided stores were a fifth of a mini step's backward attention task.
  void columns(const float* x, size_t h, std::vector<float>& dst_buffer) const {
    dst_buffer.resize(hd * ldt);
    float* dst = dst_buffer.data();
    for (size_t d = 0; d < hd; ++d) std::fill(dst + d * ldt + T, dst + d * ldt + Tp, 0.f);
    size_t i0 = 0;
#if defined(__AVX512F__)
    if (hd % 16 == 0)
      for (; i0 + 16 <= T; i0 += 16)
        for (size_t d0 = 0; d0 < hd; d0 += 16) {
          __m512 v[16];
          for (size_t r = 0; r < 16; ++r) v[r] = _mm512_loadu_ps(at(x, i0 + r, h) + d0);
          gemm::detail::transpose16x16(v);
          for (size_t c = 0; c < 16; ++c) _mm512_storeu_ps(dst + (d0 + c) * ldt + i0, v[c]);
        }
#elif defined(__AVX__)
    if (hd % 8 == 0)
      for (; i0 + 8 <= T; i0 += 8)
        for (size_t d0 = 0; d0 < hd; d0 += 8) gemm::detail::transpose8_block(at(x, i0, h) + d0, ld, 8, nullptr, dst + d0 * ldt + i0, ldt);
#endif
    for (size_t i = i0; i < T; ++i) {
      const float* src = x + (row0 + i) * ld + h * hd;
      for (size_t d = 0; d < hd; ++d) dst[d * ldt + i] = src[d];
    }
  }
  // Keys past the sequence get -inf, so their weight is exactly 0.
  void key_mask(const AttentionProblem& p, size_t b, float* dst) const {
    for (size_t j = 0; j < Tp; ++j)
      dst[j] = j >= T ? -std::numeric_limits<float>::infinity() : (p.key_mask ? p.key_mask[b * T + j] : 0.f);
  }
  float* at(float* x, size_t i, size_t h) const { return x + (row0 + i) * ld + h * hd; }
  const float* at(const float* x, size_t i, size_t h) const { return x + (row0 + i) * ld + h * hd; }
};

void forward_task(const AttentionProblem& p, size_t b, size_t h, const float* q, const float* k,
                  const float* v, float* out, float* stats, Scratch& sc) {
  const Geometry g(p, b), gq(p, b, /*queries=*/true);
  const size_t T = g.T, Tp = g.Tp, hdp = g.hdp;
  sc.mask.resize(Tp);
  sc.s.resize(kBlock * kBlock);
  sc.o.resize(kBlock * hdp);
  sc.m.resize(kBlock);
  sc.l.resize(kBlock);
  sc.mult.resize(kBlock);
  gq.rows(q, h, p.scale, sc.qs);
  g.columns(k, h, sc.kt);
  g.rows(v, h, 1.f, sc.vb);
  g.key_mask(p, b, sc.mask.data());
  const bool dropout = p.dropout_p > 0.f;
  const RowDropout drop(dropout ? p.dropout_p : 0.f, p.dropout_seed);

  for (size_t q0 = 0; q0 < gq.T; q0 += kBlock) {
    const size_t nq = std::min(kBlock, gq.T - q0), mrows = round_up(nq, kRows);
    std::fill(sc.o.begin(), sc.o.end(), 0.f);
    std::fill(sc.m.begin(), sc.m.end(), -std::numeric_limits<float>::infinity());
    std::fill(sc.l.begin(), sc.l.end(), 0.f);
    for (size_t k0 = 0; k0 < T; k0 += kBlock) {
      float* s = sc.s.data();
      mm_acc<false, false>(mrows, kBlock, g.hd, sc.qs.data() + q0 * hdp, hdp, sc.kt.data() + k0, g.ldt, s, kBlock);
      for (size_t i = 0; i < mrows; ++i) {
        float* row = s + i * kBlock;
        for (size_t j = 0; j < kBlock; j += W)
          (load(row + j) + load(sc.mask.data() + k0 + j)).store_unaligned(row + j);
        if (!online_softmax_block(row, kBlock, sc.m[i], sc.l[i], sc.o.data() + i * hdp, hdp))
          continue;  // every key so far masked out: no weight
        if (dropout && i < nq) {  // the normaliser l counts every weight; the output only the kept ones
          drop.fill(drop.row_key(b, h, q0 + i), k0, sc.mult.data());
          for (size_t j = 0; j < kBlock; j += W) (load(row + j) * load(sc.mult.data() + j)).store_unaligned(row + j);
        }
      }
      mm_acc(mrows, hdp, kBlock, s, kBlock, sc.vb.data() + k0 * hdp, hdp, sc.o.data(), hdp);
    }
    for (size_t i = 0; i < nq; ++i) {
      const float l = sc.l[i];
      const float inv = l > 0.f ? 1.f / l : 0.f;
      const float* o = sc.o.data() + i * hdp;
      float* dst = gq.at(out, q0 + i, h);
      for (size_t d = 0; d < g.hd; ++d) dst[d] = o[d] * inv;
      // max and log-sum kept apart: with lowest() masks m + log(l) rounds to m (ulp ~2e31)
      float* st = stats + ((gq.row0 + q0 + i) * p.num_heads + h) * 2;
      st[0] = l > 0.f ? sc.m[i] : 0.f;
      st[1] = l > 0.f ? std::log(l) : std::numeric_limits<float>::infinity();  // no key: weights 0
    }
  }
}

void backward_task(const AttentionProblem& p, size_t b, size_t h, const float* q, const float* k,
                   const float* v, const float* out, const float* stats, const float* dout, float* dq, float* dk,
                   float* dv, Scratch& sc) {
  const Geometry g(p, b), gq(p, b, /*queries=*/true);
  const size_t T = g.T, Tp = g.Tp, hd = g.hd, hdp = g.hdp, Tq = gq.T;
  Scratch::zero(sc.dq, gq.Tp * hdp);  // accumulated into
  sc.mask.resize(Tp);
  sc.row_max.resize(gq.Tp);
  sc.row_log_sum.resize(gq.Tp);
  sc.delta.resize(gq.Tp);
  sc.s.resize(kBlock * kBlock);
  sc.dp.resize(kBlock * kBlock);
  sc.tr.resize(kBlock * kBlock);
  sc.dk.resize(kBlock * hdp);
  sc.dv.resize(kBlock * hdp);
  sc.mult.resize(kBlock * kBlock);
  gq.rows(q, h, p.scale, sc.qs);
  g.rows(k, h, 1.f, sc.kb);
  g.columns(k, h, sc.kt);
  g.columns(v, h, sc.vt);
  gq.rows(dout, h, 1.f, sc.dob);
  g.key_mask(p, b, sc.mask.data());
  for (size_t i = 0; i < gq.Tp; ++i) {
    if (i >= Tq) {  // padding rows: probability 0, no gradient
      sc.row_max[i] = 0.f;
      sc.row_log_sum[i] = std::numeric_limits<float>::infinity();
      sc.delta[i] = 0.f;
      continue;
    }
    const float* st = stats + ((gq.row0 + i) * p.num_heads + h) * 2;
    sc.row_max[i] = st[0];
    sc.row_log_sum[i] = st[1];
    const float* o = gq.at(out, i, h);
    float acc = 0.f;  // D_i = dO_i . O_i: the softmax backward's row term
    for (size_t d = 0; d < hd; ++d) acc += sc.dob[i * hdp + d] * o[d];
    sc.delta[i] = acc;
  }
  const bool dropout = p.dropout_p > 0.f;
  const RowDropout drop(dropout ? p.dropout_p : 0.f, p.dropout_seed);

  for (size_t k0 = 0; k0 < T; k0 += kBlock) {
    const size_t nk = std::min(kBlock, T - k0);
    std::fill(sc.dk.begin(), sc.dk.end(), 0.f);
    std::fill(sc.dv.begin(), sc.dv.end(), 0.f);
    for (size_t q0 = 0; q0 < Tq; q0 += kBlock) {
      const size_t mrows = round_up(std::min(kBlock, Tq - q0), kRows);
      float* s = sc.s.data();
      float* dp = sc.dp.data();
      // P = exp(scale q.k + mask - max - log sum): the forward's probabilities, recomputed.
      mm_acc<false, false>(mrows, kBlock, hd, sc.qs.data() + q0 * hdp, hdp, sc.kt.data() + k0, g.ldt, s, kBlock);
      for (size_t i = 0; i < mrows; ++i) {
        float* row = s + i * kBlock;
        const fbatch vm(sc.row_max[q0 + i]), vl(sc.row_log_sum[q0 + i]);
        for (size_t j = 0; j < kBlock; j += W)
          xsimd::exp((load(row + j) + load(sc.mask.data() + k0 + j) - vm) - vl).store_unaligned(row + j);
      }
      // dV += (P * dropout)^T dO
      const float* pd = s;
      if (dropout) {
        float* dropped = sc.tr.data();
        for (size_t i = 0; i < mrows; ++i) {
          float* mult = sc.mult.data() + i * kBlock;
          if (q0 + i < Tq) drop.fill(drop.row_key(b, h, q0 + i), k0, mult);
          else std::fill(mult, mult + kBlock, 0.f);
          for (size_t j = 0; j < kBlock; j += W)
            (load(s + i * kBlock + j) * load(mult + j)).store_unaligned(dropped + i * kBlock + j);
        }
        pd = dropped;
      }
      mm_acc<true>(kBlock, hdp, mrows, pd, kBlock, sc.dob.data() + q0 * hdp, hdp, sc.dv.data(), hdp);
      // dP = dO V^T; dS = P * (dP * dropout - D)
      mm_acc<false, false>(mrows, kBlock, hd, sc.dob.data() + q0 * hdp, hdp, sc.vt.data() + k0, g.ldt, dp, kBlock);
      for (size_t i = 0; i < mrows; ++i) {
        float* row = s + i * kBlock;
        const float* dpr = dp + i * kBlock;
        const fbatch vd(sc.delta[q0 + i]);
        for (size_t j = 0; j < kBlock; j += W) {
          fbatch d = load(dpr + j);
          if (dropout) d *= load(sc.mult.data() + i * kBlock + j);
          (load(row + j) * (d - vd)).store_unaligned(row + j);
        }
      }
      // dQs += dS K; dK += dS^T Qs (Qs is pre-scaled, so dK needs no further scale).
      mm_acc(mrows, hdp, kBlock, s, kBlock, sc.kb.data() + k0 * hdp, hdp, sc.dq.data() + q0 * hdp, hdp);
      mm_acc<true>(kBlock, hdp, mrows, s, kBlock, sc.qs.data() + q0 * hdp, hdp, sc.dk.data(), hdp);
    }
    for (size_t j = 0; j < nk; ++j) {
      float* dkr = g.at(dk, k0 + j, h);
      float* dvr = g.at(dv, k0 + j, h);
      for (size_t d = 0; d < hd; ++d) {
        dkr[d] = sc.dk[j * hdp + d];
        dvr[d] = sc.dv[j * hdp + d];
      }
    }
  }
  for (size_t i = 0; i < Tq; ++i) {
    float* dqr = gq.at(dq, i, h);
    for (size_t d = 0; d < hd; ++d) dqr[d] = sc.dq[i * hdp + d] * p.scale;
  }
}

}  // namespace

bool dropout_keeps(uint64_t seed, float p, size_t seq, size_t head, size_t i, size_t j) {
  if (!(p > 0.f)) return true;
  const RowDropout drop(p, seed);
  return drop.keeps(drop.row_key(seq, head, i), j);
}

namespace {
void check_layout(const AttentionProblem& p) {
  if (p.cu_seqlens && p.key_mask)
    throw std::invalid_argument("[attention] a key mask indexes padded rows; packed rows (cu_seqlens) take none");
  if (p.cu_seqlens && p.query_len)
    throw std::invalid_argument("[attention] query_len is for padded rows; packed rows (cu_seqlens) take none");
  if (!(p.dropout_p >= 0.f && p.dropout_p <= 1.f))
    throw std::invalid_argument("[attention] dropout probability must be in [0, 1]");
}
}  // namespace

void attention_forward(const AttentionProblem& p, const float* q, const float* k, const float* v, float* out,
                       float* stats) {
  check_layout(p);
  parallel_for(p.batch * p.num_heads, [&](size_t t) {
    thread_local Scratch scratch;
    // a sequence with queries but no keys still runs: its outputs are zero, as the unfused op's
    if (p.query_length(t / p.num_heads) > 0) forward_task(p, t / p.num_heads, t % p.num_heads, q, k, v, out, stats, scratch);
  });
}

void attention_backward(const AttentionProblem& p, const float* q, const float* k, const float* v,
                        const float* out, const float* stats, const float* dout, float* dq, float* dk, float* dv) {
  check_layout(p);
  parallel_for(p.batch * p.num_heads, [&](size_t t) {
    thread_local Scratch scratch;
    if (p.query_length(t / p.num_heads) > 0)
      backward_task(p, t / p.num_heads, t % p.num_heads, q, k, v, out, stats, dout, dq, dk, dv, scratch);
  });
}

}  // namespace xg::attn
