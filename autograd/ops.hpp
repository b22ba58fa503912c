#pragma once
// Differentiable ops. Every op checks its inputs and throws std::invalid_argument (or
// std::out_of_range for indices) with a message that starts with the op name: "[matmul] ...".
// Results are fresh contiguous tensors, except the views (reshape of contiguous data, permute,
// transpose, slice, split, expand), which share their input's storage. Ops take float32 inputs,
// strided or not; ids and labels may be int64 tensors.
#include <cstdint>
#include <type_traits>
#include <vector>

#include "autograd/tensor.hpp"

namespace xg {
namespace gemm {
class PackedB;
}
namespace vec {
enum class Unary;  // autograd/kernels/unary_ops.def
}

enum class Reduction { None, Mean, Sum };
enum class GeluApprox { None, Tanh };  // exact erf form, or BERT's tanh approximation

// ---- element-wise, with NumPy broadcasting (ops/elementwise.cpp) ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
// x ** exponent, element-wise.
Tensor pow(const Tensor& x, float exponent);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
// x * Phi(x); GeluApprox::Tanh is 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
Tensor gelu(const Tensor& x, GeluApprox approx = GeluApprox::None);
// The kernel `op` of autograd/kernels/unary_ops.def as an op, its backward that row's Grad kernel
// (what tanh, sigmoid, relu and gelu are; nn's activations apply their row through it). Throws
// for a row without one (neg, exp, log, sqrt: call those ops).
Tensor apply_unary(vec::Unary op, const Tensor& x);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, float b);
Tensor operator-(const Tensor& a, float b);
Tensor operator*(const Tensor& a, float b);
Tensor operator/(const Tensor& a, float b);
Tensor operator+(float a, const Tensor& b);
Tensor operator-(float a, const Tensor& b);
Tensor operator*(float a, const Tensor& b);
Tensor operator/(float a, const Tensor& b);

// ---- reductions (ops/reduce.cpp); negative axes count from the end ----
// Sum over `axes` (all axes when empty); keepdim leaves them as size 1.
Tensor sum(const Tensor& x, const std::vector<int>& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int>& axes = {}, bool keepdim = false);
// Maximum along one axis; the gradient goes to the first maximal element.
Tensor max(const Tensor& x, int axis, bool keepdim = false);

// ---- shape (ops/shape.cpp) ----
// Same data, new shape; one entry may be -1 (inferred).
Tensor reshape(const Tensor& x, const std::vector<long>& shape);
// A packed copy of a strided view (x itself when already contiguous); the gradient passes through.
Tensor contiguous(const Tensor& x);
// x converted to another dtype (x itself when it already has it). Between float dtypes the
// gradient is cast back; an int64 result carries no gradient.
Tensor cast(const Tensor& x, Dtype dtype);
// Output axis i is input axis dims[i] (a view).
Tensor permute(const Tensor& x, const std::vector<int>& dims);
Tensor transpose(const Tensor& x, int axis0, int axis1);
// Elements [start, end) along axis (a view); negative positions count from the end, as in Python.
Tensor slice(const Tensor& x, int axis, long start, long end);
Tensor concat(const std::vector<Tensor>& xs, int axis);
// Consecutive pieces of the given sizes along axis (sizes must add up to the axis length).
std::vector<Tensor> split(const Tensor& x, const std::vector<size_t>& sizes, int axis);
// Entries of x at `indices` along axis (repeats allowed); the backward scatter-adds.
Tensor index_select(const Tensor& x, int axis, const std::vector<int64_t>& indices);
// Rows of weight (V, D) for each id: result is ids_shape + [D]. Rows equal to padding_idx
// (when >= 0) get no gradient.
Tensor embedding(const Tensor& weight, const std::vector<int64_t>& ids, const Shape& ids_shape,
                 int64_t padding_idx = -1);
// The same with an int64 ids tensor of any shape.
Tensor embedding(const Tensor& weight, const Tensor& ids, int64_t padding_idx = -1);
// Broadcast x to `shape` (NumPy rules) as a view: broadcast axes get stride 0.
Tensor expand(const Tensor& x, const Shape& shape);
// where(cond != 0, a, b), all three broadcast together; cond gets no gradient.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// x with `value` wherever mask != 0 (mask broadcasts to x).
Tensor masked_fill(const Tensor& x, const Tensor& mask, float value);

// ---- matrix products (ops/matmul.cpp) ----
// op(a) @ op(b) over the last two axes, op = transpose when the flag is set. Leading (batch)
// axes broadcast; a 2-D operand is shared by every batch (one large GEMM when possible).
// Strided views whose matrices have a unit stride along either of their two axes (head
// splits, transposes) feed the GEMM directly, without a copy.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// x W^T + b for x (..., in), W (out, in), b (out) or undefined: one GEMM with the bias added in
// place, and a backward that reduces the bias gradient over rows.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
// The same through a weight packed once for serving (gemm::PackedB of op(B) = W^T, (in, out);
// nn::InferenceWeights makes them). Forward only: records nothing, so it refuses an x or bias
// that requires gradients while gradients are on.
Tensor linear(const Tensor& x, const gemm::PackedB& weight, const Tensor& bias);

// ---- neural-network functions (ops/nn.cpp) ----
Tensor softmax(const Tensor& x, int axis = -1);
// Attention probabilities in one fused pass: softmax(scale * scores + mask) over the last axis.
// scores (B, H, Tq, Tk); mask undefined or additive (B, Tk), broadcast over heads and queries
// (use a large negative value, not -inf, for padding). The mask gets no gradient.
Tensor attention_softmax(const Tensor& scores, const Tensor& mask, float scale);
Tensor log_softmax(const Tensor& x, int axis = -1);
// Multi-head self-attention in one op (ops/attention.cpp): softmax(q k^T / sqrt(head_dim) + mask)
// v per head, heads being column blocks of the (B, T, H) inputs, with attention dropout applied
// to the weights when training. Never stores the (B, heads, T, T) weights: memory is linear in
// T, and the backward recomputes them blockwise. mask undefined or additive (B, T) over keys
// (no gradient). Its dropout masks differ from dropout()'s, so it is not bitwise the unfused
// composition when p > 0. q may be (B, Tq, H): Tq queries per sequence (rows at some positions
// only, repeats allowed), each against that sequence's T keys; Tq > 0 where T > 0.
Tensor multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, size_t num_heads,
                            float dropout_p, bool training, Generator& gen = default_generator());
// The composition multi_head_attention replaces, op by op on the tape: head permutes, matmul,
// attention_softmax, dropout() of the weights, matmul. Stores the (B, heads, T, T) weights; the
// reference the op is tested and benchmarked against, and nn::SelfAttention's path when the op
// is switched off. q may be (B, Tq, H) for queries at Tq of the T positions only (mask (B, T)).
Tensor unfused_multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                    size_t num_heads, float dropout_p, bool training,
                                    Generator& gen = default_generator());
// The same over packed sequences: q, k, v (N, H), sequence s the rows [cu_seqlens[s],
// cu_seqlens[s + 1]) (cu_seqlens from 0 to N, never decreasing), attending only within itself.
Tensor multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, const std::vector<size_t>& cu_seqlens,
                            size_t num_heads, float dropout_p, bool training, Generator& gen = default_generator());
// Normalises over the last axis, then scales by weight and adds bias (each [C] or undefined).
// Fused: keeps mean and 1/std for the backward.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-12f);
// Zeroes each element with probability p and scales the rest by 1/(1-p); identity when not
// training or p == 0.
Tensor dropout(const Tensor& x, float p, bool training, Generator& gen = default_generator());

// ---- losses (ops/loss.cpp) ----
// logits (N, C) or (..., C) flattened to rows; targets one class per row. Rows whose target is
// ignore_index are skipped; Mean divides by the rows kept (NaN when none are, as PyTorch does).
// label_smoothing e mixes the one-hot target with the uniform distribution, as PyTorch does:
// loss = (1 - e) * nll + e * mean over classes of -log p.
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets,
                     int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                     float label_smoothing = 0.f);
// The same with int64 targets (a tensor with one entry per row). A template only so that a
// braced list of targets, cross_entropy(x, {0, 1}), still picks the vector overload.
Tensor cross_entropy_int64(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                           Reduction reduction, float label_smoothing);
template <class T, std::enable_if_t<std::is_same_v<T, Tensor>, int> = 0>
Tensor cross_entropy(const Tensor& logits, const T& targets, int64_t ignore_index = -100,
                     Reduction reduction = Reduction::Mean, float label_smoothing = 0.f) {
  return cross_entropy_int64(logits, targets, ignore_index, reduction, label_smoothing);
}
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
// Numerically stable sigmoid + binary cross-entropy; targets in [0, 1], same shape as logits.
Tensor bce_with_logits(const Tensor& logits, const Tensor& targets,
                       Reduction reduction = Reduction::Mean);

}  // namespace xg
