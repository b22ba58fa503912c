#pragma once
// Multi-head self-attention for training, forward and backward, that never stores a (T, T)
// score or probability matrix (FlashAttention, Dao et al. 2022; the backward as in
// FlashAttention-2): the forward keeps the softmax statistics per query and head, and the backward
// recomputes each block of probabilities from it. Memory is linear in the sequence length.
//
// Layout: (rows, num_heads * head_dim) row-major for q, k, v, the output and every gradient;
// head h is the column block [h * head_dim, (h + 1) * head_dim), so no head permutes. Rows are
// either padded (sequence b is rows [b * seq_len, (b + 1) * seq_len), a key mask says which keys
// count; with query_len, its queries are rows [b * query_len, (b + 1) * query_len) of q, the
// output, dout and dq) or packed without padding (sequence s is rows [cu_seqlens[s], cu_seqlens[s + 1])).
// Attention dropout is applied inside the kernel; whether key j is dropped for query i is a hash
// of (seed, sequence, head, i, j), so the backward regenerates the forward's mask from the seed.
#include <cstddef>
#include <cstdint>

namespace xg::attn {

struct AttentionProblem {
  size_t batch = 0;                   // sequences
  size_t seq_len = 0;                 // padded layout: rows per sequence
  const size_t* cu_seqlens = nullptr;  // packed layout (batch + 1 offsets from 0); seq_len unused
  size_t num_heads = 0, head_dim = 0;
  float scale = 1.f;                  // scores are scale * q . k (+ key_mask)
  const float* key_mask = nullptr;    // padded layout only: (batch, seq_len) additive, or null
  float dropout_p = 0.f;              // probability of dropping an attention weight; 0: none
  uint64_t dropout_seed = 0;
  // Padded layout only: queries per sequence when they are not the keys' rows (a layer read at a
  // few positions); q, out, stats, dout and dq then have batch * query_len rows. 0: the keys' rows.
  size_t query_len = 0;
  size_t width() const { return num_heads * head_dim; }
  size_t rows() const { return cu_seqlens ? cu_seqlens[batch] : batch * seq_len; }
  size_t first_row(size_t s) const { return cu_seqlens ? cu_seqlens[s] : s * seq_len; }
  size_t length(size_t s) const { return cu_seqlens ? cu_seqlens[s + 1] - cu_seqlens[s] : seq_len; }
  size_t query_rows() const { return query_len ? batch * query_len : rows(); }
  size_t first_query_row(size_t s) const { return query_len ? s * query_len : first_row(s); }
  size_t query_length(size_t s) const { return query_len ? query_len : length(s); }
};

// out = softmax(scale * q k^T + key_mask) (dropped out) v per sequence and head; stats receives
// (query rows, num_heads, 2) softmax statistics for the backward: each score row's max and the log of
// its sum of exponentials, apart (with lowest()-valued masks their sum would round to the max).
// Runs on the thread pool. Throws if cu_seqlens is set with key_mask or query_len.
void attention_forward(const AttentionProblem& p, const float* q, const float* k, const float* v, float* out,
                       float* stats);

// dq, dk, dv (overwritten) from dout, given the forward's inputs, out and stats.
void attention_backward(const AttentionProblem& p, const float* q, const float* k, const float* v,
                        const float* out, const float* stats, const float* dout, float* dq, float* dk, float* dv);

// Whether attention dropout keeps key j for query i of head `head` in sequence `seq` (the
// kernels' mask, exposed for tests and references).
bool dropout_keeps(uint64_t seed, float p, size_t seq, size_t head, size_t i, size_t j);

}  // namespace xg::attn
