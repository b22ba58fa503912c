// Blocked self-attention with an online softmax (see attention.hpp). A task is one sequence, one
// head and up to kQueryBlock queries; it copies its queries (bias added, pre-scaled, zero-padded
// to whole SIMD vectors) once, then for every block of kKeyBlock keys: transposes the keys so the
// scores need no horizontal sums, updates the running max and sum, rescales the output rows and
// adds probabilities times values. Register tiles are 4 queries x 4 vectors.
#include "autograd/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/kernels/online_softmax.hpp"
#include "autograd/parallel.hpp"
#include "autograd/xt.hpp"

namespace xg::attn {
namespace {

constexpr size_t W = kSimdWidth;
constexpr size_t kRows = 4;             // queries per register tile
constexpr size_t kKeyBlock = 4 * W;     // keys per block: one register tile of scores per row
constexpr size_t kQueryBlock = 64;      // queries per task

inline fbatch load(const float* p) { return fbatch::load_unaligned(p); }

struct Scratch {
  std::vector<float> q, kt, v, p, o, m, l;
  void size_for(size_t hdp, size_t hd) {
    q.assign(kQueryBlock * hdp, 0.f);
    kt.resize(hd * kKeyBlock);
    v.assign(kKeyBlock * hdp, 0.f);
    p.resize(kQueryBlock * kKeyBlock);
    o.resize(kQueryBlock * hdp);
    m.resize(kQueryBlock);
    l.resize(kQueryBlock);
  }
};

// s[r][0..kKeyBlock) = q[r] . kt[:, j] for kRows rows starting at q.
void score_tile(const float* q, size_t hdp, const float* kt, size_t hd, float* s) {
  fbatch acc[kRows][4];
  for (auto& row : acc)
    for (auto& a : row) a = fbatch(0.f);
  for (size_t d = 0; d < hd; ++d) {
    const float* k = kt + d * kKeyBlock;
    fbatch k0 = load(k), k1 = load(k + W), k2 = load(k + 2 * W), k3 = load(k + 3 * W);
    keep_in_register(k0, k1, k2, k3);
    for (size_t r = 0; r < kRows; ++r) {
      const fbatch qv(q[r * hdp + d]);
      acc[r][0] = xsimd::fma(qv, k0, acc[r][0]);
      acc[r][1] = xsimd::fma(qv, k1, acc[r][1]);
      acc[r][2] = xsimd::fma(qv, k2, acc[r][2]);
      acc[r][3] = xsimd::fma(qv, k3, acc[r][3]);
    }
  }
  for (size_t r = 0; r < kRows; ++r)
    for (size_t c = 0; c < 4; ++c) acc[r][c].store_unaligned(s + r * kKeyBlock + c * W);
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
  const size_t vecs = hdp / W;
  size_t c0 = 0;
  for (; c0 + 4 <= vecs; c0 += 4) value_tile<4>(p, v, hdp, nk, c0, o);
  switch (vecs - c0) {
    case 3: value_tile<3>(p, v, hdp, nk, c0, o); break;
    case 2: value_tile<2>(p, v, hdp, nk, c0, o); break;
    case 1: value_tile<1>(p, v, hdp, nk, c0, o); break;
    default: break;
  }
}

void attend_block(const PackedQKV& x, float* out, size_t ld_out, size_t q_begin, size_t nq, size_t seq_begin,
                  size_t seq_end, size_t head, size_t hd, float scale, Scratch& sc) {
  const size_t hdp = (hd + W - 1) / W * W;
  const size_t col = head * hd;
  const size_t rows_padded = (nq + kRows - 1) / kRows * kRows;
  // Queries: bias added, scaled, zero-padded (unused rows stay zero from size_for).
  for (size_t i = 0; i < nq; ++i) {
    const float* src = x.q + (q_begin + i) * x.ld + col;
    float* dst = sc.q.data() + i * hdp;
    for (size_t d = 0; d < hd; ++d) dst[d] = (src[d] + (x.q_bias ? x.q_bias[col + d] : 0.f)) * scale;
  }
  std::fill(sc.o.begin(), sc.o.begin() + rows_padded * hdp, 0.f);
  std::fill(sc.m.begin(), sc.m.end(), -INFINITY);
  std::fill(sc.l.begin(), sc.l.end(), 0.f);
  for (size_t k0 = seq_begin; k0 < seq_end; k0 += kKeyBlock) {
    const size_t nk = std::min(kKeyBlock, seq_end - k0);
    if (nk < kKeyBlock) std::fill(sc.kt.begin(), sc.kt.end(), 0.f);
    for (size_t j = 0; j < nk; ++j) {
      const float* k = x.k + (k0 + j) * x.ld + col;
      const float* v = x.v + (k0 + j) * x.ld + col;
      float* vd = sc.v.data() + j * hdp;
      for (size_t d = 0; d < hd; ++d) {
        sc.kt[d * kKeyBlock + j] = k[d] + (x.k_bias ? x.k_bias[col + d] : 0.f);
        vd[d] = v[d] + (x.v_bias ? x.v_bias[col + d] : 0.f);
      }
    }
    for (size_t r = 0; r < rows_padded; r += kRows) {
      float* s = sc.p.data() + r * kKeyBlock;
      score_tile(sc.q.data() + r * hdp, hdp, sc.kt.data(), hd, s);
      for (size_t i = r; i < r + kRows; ++i) {
        float* row = sc.p.data() + i * kKeyBlock;
        for (size_t j = nk; j < kKeyBlock; ++j) row[j] = -INFINITY;  // keys past the sequence: weight exactly 0
        online_softmax_block(row, kKeyBlock, sc.m[i], sc.l[i], sc.o.data() + i * hdp, hdp);
      }
      value_tiles(s, sc.v.data(), hdp, nk, sc.o.data() + r * hdp);
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
  struct Task { size_t seq, head, q_begin; };
  std::vector<Task> tasks;
  for (size_t s = 0; s < num_seqs; ++s)
    for (size_t h = 0; h < num_heads; ++h)
      for (size_t q = cu_seqlens[s]; q < cu_seqlens[s + 1]; q += kQueryBlock) tasks.push_back({s, h, q});
  const size_t hdp = (head_dim + W - 1) / W * W;
  parallel_for(tasks.size(), [&](size_t t) {
    thread_local Scratch scratch;
    scratch.size_for(hdp, head_dim);
    const Task& task = tasks[t];
    const size_t end = cu_seqlens[task.seq + 1];
    attend_block(qkv, out, ld_out, task.q_begin, std::min(kQueryBlock, end - task.q_begin), cu_seqlens[task.seq], end,
                 task.head, head_dim, scale, scratch);
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
