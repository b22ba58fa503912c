// Blocked self-attention with an online softmax (see attention.hpp). First every (sequence, head)
// gets its keys transposed and its values copied, biases added and zero-padded to whole SIMD
// vectors, once: the query blocks of a long sequence all read them. Then a task is one sequence,
// one head and up to kQueryBlock queries; it copies its queries (bias added, pre-scaled,
// zero-padded to whole SIMD vectors), then for every block of up to kKeyBlock keys computes the scores
// (no horizontal sums: the keys are transposed), updates the running max and sum, rescales the
// output rows and adds probabilities times values. Register tiles are 4 queries x kTile vectors.
#include "autograd/kernels/attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "autograd/kernels/online_softmax.hpp"
#include "autograd/kernels/round_up.hpp"
#include "autograd/kernels/transpose.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/parallel.hpp"
#include "autograd/xt.hpp"

namespace xg::attn {
namespace {

constexpr size_t W = kSimdWidth;
constexpr size_t kRows = 4;             // queries per register tile
// Vectors per register tile row: kRows x kTile accumulators, kTile key or value vectors and a
// broadcast fit AVX-512's 32 registers at 4 and AVX2's 16 at 3 (at 4 the accumulators spilled).
constexpr size_t kTile = W >= 16 ? 4 : 3;
// Keys per block, at most: each block pays a running-max update and an output rescale per query,
// so AVX2's 24-key blocks (one register tile) cost 6 of them at 128 keys, and the last block was
// two-thirds padding; a block's scores take ceil(keys / W) vectors, as many tiles as that needs.
constexpr size_t kKeyBlock = 64;
static_assert(kKeyBlock % W == 0, "a block is whole vectors");
constexpr size_t kQueryBlock = 64;      // queries per task

inline fbatch load(const float* p) { return fbatch::load_unaligned(p); }

struct Scratch {
  std::vector<float> q, p, o, m, l;
  void size_for(size_t hdp) {
    q.assign(kQueryBlock * hdp, 0.f);
    p.resize(kQueryBlock * kKeyBlock);
    o.resize(kQueryBlock * hdp);
    m.resize(kQueryBlock);
    l.resize(kQueryBlock);
  }
};

// Every head's keys and values with their biases, laid out for the block products. Sequence s
// owns key slots [start[s], start[s + 1]): its length rounded up to whole SIMD vectors. Head h of
// sequence s has its keys transposed, (head_dim, its slots), zero past its length (a score tile
// reads whole vectors), and its values (its slots, hdp), zero past head_dim (the rows past its
// length are never read); each block is contiguous.
struct PreparedKV {
  std::vector<size_t> start;
  size_t slots = 0, hd = 0, hdp = 0;
  float *kt = nullptr, *v = nullptr;  // in an AttentionWorkspace
  size_t key_stride(size_t s) const { return start[s + 1] - start[s]; }
  float* keys(size_t h, size_t s) const { return kt + (h * slots + start[s]) * hd; }
  float* values(size_t h, size_t s) const { return v + (h * slots + start[s]) * hdp; }
};

// kt[d * ldk + j] = k[j * ld + d] + bias[d] for j < len, 0 for len <= j < ldk (a multiple of
// W). With AVX-512 and whole 16-float head slices, 16 x 16 blocks go through registers;
// with AVX and whole 8-float slices, 8 x 8 blocks.
void transpose_keys(const float* k, size_t ld, const float* bias, size_t len, size_t hd, float* kt, size_t ldk) {
#if defined(__AVX512F__)
  if (hd % 16 == 0) {
    for (size_t j0 = 0; j0 < ldk; j0 += 16)
      for (size_t d0 = 0; d0 < hd; d0 += 16) {
        const __m512 b = bias ? _mm512_loadu_ps(bias + d0) : _mm512_setzero_ps();
        __m512 r[16];
        for (size_t i = 0; i < 16; ++i)
          r[i] = j0 + i < len ? _mm512_add_ps(_mm512_loadu_ps(k + (j0 + i) * ld + d0), b) : _mm512_setzero_ps();
        gemm::detail::transpose16x16(r);
        for (size_t i = 0; i < 16; ++i) _mm512_storeu_ps(kt + (d0 + i) * ldk + j0, r[i]);
      }
    return;
  }
#elif defined(__AVX__)
  static_assert(W % 8 == 0, "ldk, a multiple of W, is whole 8 x 8 blocks");
  if (hd % 8 == 0) {
    for (size_t j0 = 0; j0 < ldk; j0 += 8)
      for (size_t d0 = 0; d0 < hd; d0 += 8)
        gemm::detail::transpose8_block(k + j0 * ld + d0, ld, len > j0 ? len - j0 : 0, bias ? bias + d0 : nullptr,
                                       kt + d0 * ldk + j0, ldk);
    return;
  }
#endif
  for (size_t j0 = 0; j0 < ldk; j0 += W)  // a few keys at a time: their transpose stays in L1
    for (size_t j = j0; j < j0 + W; ++j)
      for (size_t d = 0; d < hd; ++d) kt[d * ldk + j] = j < len ? k[j * ld + d] + (bias ? bias[d] : 0.f) : 0.f;
}

void prepare_kv(const PackedQKV& x, const size_t* cu_seqlens, size_t num_seqs, size_t num_heads, size_t hd,
                AttentionWorkspace& ws, PreparedKV& kv) {
  kv.hd = hd;
  kv.hdp = round_up(hd, W);
  kv.start.assign(num_seqs + 1, 0);
  for (size_t s = 0; s < num_seqs; ++s)
    kv.start[s + 1] = kv.start[s] + round_up(cu_seqlens[s + 1] - cu_seqlens[s], W);
  kv.slots = kv.start[num_seqs];
  kv.kt = ws.keys(num_heads * kv.slots * hd);
  kv.v = ws.values(num_heads * kv.slots * kv.hdp);
  parallel_for(num_seqs * num_heads, [&](size_t task) {
    const size_t s = task / num_heads, h = task % num_heads, col = h * hd;
    const size_t begin = cu_seqlens[s], len = cu_seqlens[s + 1] - begin, ldk = kv.key_stride(s);
    const float* k = x.k + begin * x.ld + col;
    const float* k_bias = x.k_bias ? x.k_bias + col : nullptr;
    transpose_keys(k, x.ld, k_bias, len, hd, kv.keys(h, s), ldk);
    float* v = kv.values(h, s);
    for (size_t j = 0; j < len; ++j) {  // value rows past the sequence are never read
      float* vd = v + j * kv.hdp;
      const float* vs = x.v + (begin + j) * x.ld + col;
      if (x.v_bias) vec::add(vs, x.v_bias + col, vd, hd);
      else std::copy(vs, vs + hd, vd);
      std::fill(vd + hd, vd + kv.hdp, 0.f);
    }
  });
}

// Calls tile(std::integral_constant<size_t, NC>, c0) over `vecs` vectors: kTile at a time, then
// the 1-3 left, so every tile width is a compile-time constant.
template <class Tile>
void for_each_tile(size_t vecs, Tile&& tile) {
  size_t c0 = 0;
  for (; c0 + kTile <= vecs; c0 += kTile) tile(std::integral_constant<size_t, kTile>{}, c0);
  switch (vecs - c0) {  // fewer than kTile left
    case 3: tile(std::integral_constant<size_t, 3>{}, c0); break;
    case 2: tile(std::integral_constant<size_t, 2>{}, c0); break;
    case 1: tile(std::integral_constant<size_t, 1>{}, c0); break;
    default: break;
  }
}

// s[r][j] = q[r] . kt[:, j] for kRows rows starting at q and keys j in [c0 * W, (c0 + NC) * W);
// kt's rows are ldk apart, s's kKeyBlock.
template <size_t NC>
void score_tile(const float* q, size_t hdp, const float* kt, size_t ldk, size_t hd, size_t c0, float* s) {
  kt += c0 * W;
  s += c0 * W;
  fbatch acc[kRows][NC];
  for (auto& row : acc)
    for (auto& a : row) a = fbatch(0.f);
  for (size_t d = 0; d < hd; ++d) {
    fbatch k[NC];
    for (size_t c = 0; c < NC; ++c) {
      k[c] = load(kt + d * ldk + c * W);
      keep_in_register(k[c]);
    }
    for (size_t r = 0; r < kRows; ++r) {
      const fbatch qv(q[r * hdp + d]);
      for (size_t c = 0; c < NC; ++c) acc[r][c] = xsimd::fma(qv, k[c], acc[r][c]);
    }
  }
  for (size_t r = 0; r < kRows; ++r)
    for (size_t c = 0; c < NC; ++c) acc[r][c].store_unaligned(s + r * kKeyBlock + c * W);
}

// score_tile over the first `vecs` vectors of keys.
void score_tiles(const float* q, size_t hdp, const float* kt, size_t ldk, size_t hd, size_t vecs, float* s) {
  for_each_tile(vecs, [&](auto nc, size_t c0) { score_tile<nc>(q, hdp, kt, ldk, hd, c0, s); });
}

// o[r][c0*W .. (c0+NC)*W) += sum_j p[r][j] v[j] for kRows rows.
template <size_t NC>
void value_tile(const float* p, const float* v, size_t hdp, size_t nk, size_t c0, float* o) {
  fbatch acc[kRows][NC];
  for (size_t r = 0; r < kRows; ++r)
    for (size_t c = 0; c < NC; ++c) acc[r][c] = load(o + r * hdp + (c0 + c) * W);
  for (size_t j = 0; j < nk; ++j) {
    fbatch vv[NC];
    for (size_t c = 0; c < NC; ++c) {
      vv[c] = load(v + j * hdp + (c0 + c) * W);
      keep_in_register(vv[c]);
    }
    for (size_t r = 0; r < kRows; ++r) {
      const fbatch pv(p[r * kKeyBlock + j]);
      for (size_t c = 0; c < NC; ++c) acc[r][c] = xsimd::fma(pv, vv[c], acc[r][c]);
    }
  }
  for (size_t r = 0; r < kRows; ++r)
    for (size_t c = 0; c < NC; ++c) acc[r][c].store_unaligned(o + r * hdp + (c0 + c) * W);
}

void value_tiles(const float* p, const float* v, size_t hdp, size_t nk, float* o) {
  for_each_tile(hdp / W, [&](auto nc, size_t c0) { value_tile<nc>(p, v, hdp, nk, c0, o); });
}

// Queries q_begin .. q_begin + nq - 1 (rows of x.q, or with `query_rows` its entries) against
// their sequence's keys; query i's output goes to row q_begin + i of out.
void attend_block(const PackedQKV& x, const PreparedKV& kv, float* out, size_t ld_out, const size_t* query_rows,
                  size_t q_begin, size_t nq, size_t seq, size_t seq_len, size_t head, float scale, Scratch& sc) {
  const size_t hd = kv.hd, hdp = kv.hdp;
  const size_t col = head * hd;
  const size_t rows_padded = (nq + kRows - 1) / kRows * kRows;
  // Queries: bias added, scaled, zero-padded (unused rows stay zero from size_for).
  for (size_t i = 0; i < nq; ++i) {
    const size_t row = query_rows ? query_rows[q_begin + i] : q_begin + i;
    const float* src = x.q + row * x.ld + col;
    float* dst = sc.q.data() + i * hdp;
    for (size_t d = 0; d < hd; ++d) dst[d] = (src[d] + (x.q_bias ? x.q_bias[col + d] : 0.f)) * scale;
  }
  std::fill(sc.o.begin(), sc.o.begin() + rows_padded * hdp, 0.f);
  std::fill(sc.m.begin(), sc.m.end(), -INFINITY);
  std::fill(sc.l.begin(), sc.l.end(), 0.f);
  const float* keys = kv.keys(head, seq);
  const float* values = kv.values(head, seq);
  for (size_t k0 = 0; k0 < seq_len; k0 += kKeyBlock) {
    const size_t nk = std::min(kKeyBlock, seq_len - k0), vecs = (nk + W - 1) / W;
    for (size_t r = 0; r < rows_padded; r += kRows) {
      float* s = sc.p.data() + r * kKeyBlock;
      score_tiles(sc.q.data() + r * hdp, hdp, keys + k0, kv.key_stride(seq), hd, vecs, s);
      for (size_t i = r; i < r + kRows; ++i) {
        float* row = sc.p.data() + i * kKeyBlock;
        for (size_t j = nk; j < vecs * W; ++j) row[j] = -INFINITY;  // keys past the sequence: weight exactly 0
        online_softmax_block(row, vecs * W, sc.m[i], sc.l[i], sc.o.data() + i * hdp, hdp);
      }
      value_tiles(s, values + k0 * hdp, hdp, nk, sc.o.data() + r * hdp);
    }
  }
  for (size_t i = 0; i < nq; ++i) {
    const float inv = 1.f / sc.l[i];
    const float* o = sc.o.data() + i * hdp;
    float* dst = out + (q_begin + i) * ld_out + col;
    for (size_t d = 0; d < hd; ++d) dst[d] = o[d] * inv;
  }
}

}  // namespace

void packed_self_attention(const PackedQKV& qkv, float* out, size_t ld_out, const size_t* cu_seqlens,
                           size_t num_seqs, size_t num_heads, size_t head_dim, float scale) {
  AttentionWorkspace workspace;
  packed_self_attention(qkv, out, ld_out, cu_seqlens, num_seqs, num_heads, head_dim, scale, workspace);
}

void packed_self_attention(const PackedQKV& qkv, float* out, size_t ld_out, const size_t* cu_seqlens,
                           size_t num_seqs, size_t num_heads, size_t head_dim, float scale,
                           AttentionWorkspace& workspace, const QueryRows* queries) {
  // Sequence s's queries are [first(s), first(s + 1)): its rows, or its entries of queries->rows.
  const size_t* first = queries ? queries->begin : cu_seqlens;
  if (queries)
    for (size_t s = 0; s < num_seqs; ++s)
      for (size_t i = first[s]; i < first[s + 1]; ++i)
        if (queries->rows[i] < cu_seqlens[s] || queries->rows[i] >= cu_seqlens[s + 1])
          throw std::invalid_argument(fmt::format("[attention] query {} of sequence {} is row {}, outside the sequence's rows [{}, {})",
                                                  i, s, queries->rows[i], cu_seqlens[s], cu_seqlens[s + 1]));
  PreparedKV kv;
  prepare_kv(qkv, cu_seqlens, num_seqs, num_heads, head_dim, workspace, kv);
  struct Task { size_t seq, head, q_begin; };
  std::vector<Task> tasks;
  for (size_t s = 0; s < num_seqs; ++s)
    for (size_t h = 0; h < num_heads; ++h)
      for (size_t q = first[s]; q < first[s + 1]; q += kQueryBlock) tasks.push_back({s, h, q});
  parallel_for(tasks.size(), [&](size_t t) {
    thread_local Scratch scratch;
    scratch.size_for(kv.hdp);
    const Task& task = tasks[t];
    const size_t end = first[task.seq + 1];
    attend_block(qkv, kv, out, ld_out, queries ? queries->rows : nullptr, task.q_begin,
                 std::min(kQueryBlock, end - task.q_begin), task.seq, cu_seqlens[task.seq + 1] - cu_seqlens[task.seq],
                 task.head, scale, scratch);
  });
}

void packed_self_attention_reference(const PackedQKV& x, float* out, size_t ld_out, const size_t* cu_seqlens,
                                     size_t num_seqs, size_t num_heads, size_t hd, float scale) {
  auto bias = [](const float* b, size_t i) { return b ? double(b[i]) : 0.0; };
  for (size_t s = 0; s < num_seqs; ++s) {
    const size_t begin = cu_seqlens[s], end = cu_seqlens[s + 1];
    std::vector<double> p(end - begin);
    for (size_t h = 0; h < num_heads; ++h)
      for (size_t i = begin; i < end; ++i) {
        double mx = -INFINITY;
        for (size_t j = begin; j < end; ++j) {
          double dot = 0;
          for (size_t d = 0; d < hd; ++d) {
            const size_t c = h * hd + d;
            dot += (x.q[i * x.ld + c] + bias(x.q_bias, c)) * (x.k[j * x.ld + c] + bias(x.k_bias, c));
          }
          p[j - begin] = dot * scale;
          mx = std::max(mx, p[j - begin]);
        }
        double sum = 0;
        for (double& e : p) sum += (e = std::exp(e - mx));
        for (size_t d = 0; d < hd; ++d) {
          const size_t c = h * hd + d;
          double acc = 0;
          for (size_t j = begin; j < end; ++j) acc += p[j - begin] * (x.v[j * x.ld + c] + bias(x.v_bias, c));
          out[i * ld_out + c] = float(acc / sum);
        }
      }
  }
}

}  // namespace xg::attn
