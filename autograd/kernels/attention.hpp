#pragma once
// Self-attention over packed (padding-free) sequences that never materialises a sequence's
// (T, T) score matrix: each task takes a block of queries of one sequence and one head, walks
// that sequence's keys a block at a time and keeps a running (online) softmax, as
// FlashAttention does (Dao et al. 2022). Each head's keys (transposed) and values are laid out
// once per call, biases added, for all of its query blocks: two (tokens, hidden) copies, padded
// to whole SIMD vectors per sequence. With a few blocks of scratch per thread, memory is linear in
// the sequence length.
#include <cstddef>
#include <memory>

namespace xg::attn {

// Where the packed activations are. Rows [cu_seqlens[s], cu_seqlens[s + 1]) belong to sequence s
// (cu_seqlens has num_seqs + 1 entries, starting at 0); head h of row r is the head_dim floats at
// base + r * ld + h * head_dim. q, k, v may be column slices of one (rows, 3H) buffer.
struct PackedQKV {
  const float *q, *k, *v;
  size_t ld;                                     // row stride of q, k and v
  const float *q_bias, *k_bias, *v_bias;         // (num_heads * head_dim) each, or null
};

// Room for the keys and values laid out per head. One kept across calls (an encoder's layers)
// is allocated once; it grows as needed (never zeroed: what is read is written first) and is
// freed with it.
class AttentionWorkspace {
 public:
  AttentionWorkspace() = default;
  AttentionWorkspace(const AttentionWorkspace&) = delete;
  AttentionWorkspace& operator=(const AttentionWorkspace&) = delete;
  float* keys(size_t n) { return grown(keys_, key_capacity_, n); }
  float* values(size_t n) { return grown(values_, value_capacity_, n); }

 private:
  static float* grown(std::unique_ptr<float[]>& p, size_t& capacity, size_t n) {
    if (n > capacity) {
      p.reset(new float[n]);
      capacity = n;
    }
    return p.get();
  }
  std::unique_ptr<float[]> keys_, values_;
  size_t key_capacity_ = 0, value_capacity_ = 0;
};

// Queries at some rows only (a layer whose output is read at a few rows: a classifier's first
// token): sequence s's queries are rows[begin[s]], ..., rows[begin[s + 1] - 1], packed rows of q
// in [cu_seqlens[s], cu_seqlens[s + 1]) (repeats allowed), and query i's output is row i of out.
struct QueryRows {
  const size_t* rows;
  const size_t* begin;  // num_seqs + 1 non-decreasing offsets into rows, starting at 0 (not checked)
};

// out[r, h*head_dim + d] = sum_j softmax_j(scale * (q_r + bq) . (k_j + bk)) (v_j + bv)[d] over
// the keys j of r's sequence, for every head. out has row stride ld_out. Sequences of length 0
// are allowed (nothing is written for them). With `queries`, only those rows are computed, each
// into its own row of out; a query row outside its sequence throws. Runs on the thread pool.
void packed_self_attention(const PackedQKV& qkv, float* out, size_t ld_out, const size_t* cu_seqlens,
                           size_t num_seqs, size_t num_heads, size_t head_dim, float scale,
                           AttentionWorkspace& workspace, const QueryRows* queries = nullptr);
// The same with a workspace of its own.
void packed_self_attention(const PackedQKV& qkv, float* out, size_t ld_out, const size_t* cu_seqlens,
                           size_t num_seqs, size_t num_heads, size_t head_dim, float scale);

// The plain version (scores materialised per query, double accumulation): the tests' reference.
void packed_self_attention_reference(const PackedQKV& qkv, float* out, size_t ld_out,
                                     const size_t* cu_seqlens, size_t num_seqs, size_t num_heads,
                                     size_t head_dim, float scale);

}  // namespace xg::attn
