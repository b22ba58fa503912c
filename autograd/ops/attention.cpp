// multi_head_attention: the memory-linear attention op (autograd/kernels/flash_attention.hpp)
// on the tape, over padded (B, T, H) or packed (N, H) rows; and the unfused composition it replaces.
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "autograd/engine.hpp"
#include "autograd/kernels/flash_attention.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops/broadcast.hpp"

namespace xg {
namespace {

constexpr const char* kOp = "multi_head_attention";

void check_common(const Tensor& q, const Tensor& k, const Tensor& v, size_t dims, const char* layout,
                  size_t num_heads, float dropout_p, const char* op = kOp) {
  if (q.dim() != dims || k.shape() != q.shape() || v.shape() != q.shape())
    throw std::invalid_argument(fmt::format("[{}] q, k and v must be one {} shape, got {}, {}, {}", op, layout,
                                            shape_str(q.shape()), shape_str(k.shape()), shape_str(v.shape())));
  const size_t H = q.shape().back();
  if (num_heads == 0 || H % num_heads != 0)
    throw std::invalid_argument(fmt::format("[{}] width {} is not a multiple of num_heads {}", op, H, num_heads));
  if (!(dropout_p >= 0.f && dropout_p <= 1.f))
    throw std::invalid_argument(fmt::format("[{}] dropout probability {} is not in [0, 1]", op, dropout_p));
}

// Runs the kernel on p (layout filled in by the caller) and records the backward, whose closure
// holds what p's pointers point into (a copy of the mask, the offsets) for as long as it lives.
Tensor run(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, const Tensor& mask_in, attn::AttentionProblem p,
           std::shared_ptr<const std::vector<size_t>> cu_seqlens, float dropout_p, bool training, Generator& gen) {
  const Tensor q = detail::dense(q_in, kOp), k = detail::dense(k_in, kOp), v = detail::dense(v_in, kOp);
  // a copy: the backward reads the mask again, and the caller may reuse its buffer meanwhile
  const Tensor mask = mask_in.defined() ? detail::dense(mask_in, kOp).detach().clone() : Tensor();
  const size_t H = q.shape().back();
  p.head_dim = H / p.num_heads;
  p.scale = 1.f / std::sqrt(float(p.head_dim));
  p.key_mask = mask.defined() ? mask.data() : nullptr;
  p.cu_seqlens = cu_seqlens ? cu_seqlens->data() : nullptr;
  if (training && dropout_p > 0.f) {
    p.dropout_p = dropout_p;
    p.dropout_seed = gen.next_u64();  // one draw per call, as dropout() does
  }
  Tensor out = Tensor::empty(q.shape());
  Tensor stats = Tensor::empty({p.query_rows(), p.num_heads, 2});
  attn::attention_forward(p, q.data(), k.data(), v.data(), out.data(), stats.data());

  const Tensor Q = q.detach(), K = k.detach(), V = v.detach(), O = out.detach();
  return record(kOp, out, {q_in, k_in, v_in, mask_in}, {Q, K, V, O}, [=](const Tensor& g) -> std::vector<Tensor> {
    (void)mask, (void)cu_seqlens;  // kept alive: p points into them
    Tensor dq = Tensor::empty(Q.shape()), dk = Tensor::empty(K.shape()), dv = Tensor::empty(K.shape());
    attn::attention_backward(p, Q.data(), K.data(), V.data(), O.data(), stats.data(), g.data(), dq.data(), dk.data(),
                             dv.data());
    return {dq, dk, dv, Tensor()};
  });
}

// q (B, Tq, H) with k, v (B, T, H) and mask undefined or (B, T): the padded layout's checks, where q
// may hold other rows than k and v (queries at some positions only): one batch, one width.
void check_padded(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, size_t num_heads,
                  float dropout_p, const char* op) {
  if (q.dim() != 3 || k.dim() != 3 || k.shape() != v.shape() || q.size(0) != k.size(0) || q.size(2) != k.size(2))
    throw std::invalid_argument(fmt::format("[{}] q (B, Tq, H) and k, v (B, T, H) must share B and H, got {}, {}, {}", op,
                                            shape_str(q.shape()), shape_str(k.shape()), shape_str(v.shape())));
  check_common(k, k, v, 3, "(B, T, H)", num_heads, dropout_p, op);
  if (mask.defined() && mask.shape() != Shape{k.size(0), k.size(1)})
    throw std::invalid_argument(fmt::format("[{}] mask has shape {}, expected [{}, {}]", op, shape_str(mask.shape()),
                                            k.size(0), k.size(1)));
}

}  // namespace

Tensor multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, size_t num_heads,
                            float dropout_p, bool training, Generator& gen) {
  check_padded(q, k, v, mask, num_heads, dropout_p, kOp);
  if (q.size(1) == 0 && k.size(1) > 0)  // query_len 0 would mean the keys' rows
    throw std::invalid_argument(fmt::format("[{}] q {} has no query rows", kOp, shape_str(q.shape())));
  attn::AttentionProblem p;
  p.batch = k.size(0);
  p.seq_len = k.size(1);
  p.query_len = q.size(1) == k.size(1) ? 0 : q.size(1);
  p.num_heads = num_heads;
  return run(q, k, v, mask, p, nullptr, dropout_p, training, gen);
}

Tensor unfused_multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                    size_t num_heads, float dropout_p, bool training, Generator& gen) {
  constexpr const char* op = "unfused_multi_head_attention";
  check_padded(q, k, v, mask, num_heads, dropout_p, op);
  const long B = long(q.size(0)), H = long(q.size(2));
  const long nh = long(num_heads), hd = H / nh;
  // (B, T, H) -> (B, heads, T, head_dim)
  auto split_heads = [&](const Tensor& t) { return permute(reshape(t, {B, long(t.size(1)), nh, hd}), {0, 2, 1, 3}); };
  Tensor probs = attention_softmax(matmul(split_heads(q), split_heads(k), false, true), mask, 1.f / std::sqrt(float(hd)));
  probs = dropout(probs, dropout_p, training, gen);
  return reshape(permute(matmul(probs, split_heads(v)), {0, 2, 1, 3}), {B, long(q.size(1)), H});
}

Tensor multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, const std::vector<size_t>& cu_seqlens,
                            size_t num_heads, float dropout_p, bool training, Generator& gen) {
  check_common(q, k, v, 2, "(N, H)", num_heads, dropout_p);
  if (cu_seqlens.empty() || cu_seqlens.front() != 0 || cu_seqlens.back() != q.size(0))
    throw std::invalid_argument(fmt::format("[{}] cu_seqlens must run from 0 to the {} rows, got {} offsets ending at {}",
                                            kOp, q.size(0), cu_seqlens.size(), cu_seqlens.empty() ? 0 : cu_seqlens.back()));
  for (size_t s = 1; s < cu_seqlens.size(); ++s)
    if (cu_seqlens[s] < cu_seqlens[s - 1])
      throw std::invalid_argument(fmt::format("[{}] cu_seqlens decreases at entry {} ({} after {})", kOp, s,
                                              cu_seqlens[s], cu_seqlens[s - 1]));
  attn::AttentionProblem p;
  p.batch = cu_seqlens.size() - 1;
  p.num_heads = num_heads;
  return run(q, k, v, Tensor(), p, std::make_shared<const std::vector<size_t>>(cu_seqlens), dropout_p, training, gen);
}

}  // namespace xg
