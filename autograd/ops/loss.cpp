// Losses: fused softmax cross-entropy, MSE, and binary cross-entropy with logits.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/engine.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops/broadcast.hpp"
#include "autograd/parallel.hpp"

namespace xg {

namespace {
// Applies a reduction to per-element losses; `count` is the divisor for Mean.
Tensor reduce_loss(const Tensor& per_item, Reduction r, float count) {
  switch (r) {
    case Reduction::None: return per_item;
    case Reduction::Sum: return sum(per_item);
    case Reduction::Mean: return mul(sum(per_item), Tensor::scalar(1.f / count));
  }
  return per_item;
}
}  // namespace

Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets,
                     int64_t ignore_index, Reduction reduction, float label_smoothing) {
  if (!(label_smoothing >= 0.f && label_smoothing <= 1.f))
    throw std::invalid_argument(
        fmt::format("[cross_entropy] label_smoothing {} is not in [0, 1]", label_smoothing));
  if (logits.dim() == 0)
    throw std::invalid_argument("[cross_entropy] logits need a class axis, got a scalar");
  const size_t C = logits.shape().back(), N = leading_numel(logits.shape());
  if (targets.size() != N)
    throw std::invalid_argument(fmt::format("[cross_entropy] {} targets for {} rows of logits {}",
                                            targets.size(), N, shape_str(logits.shape())));
  size_t kept = 0;
  for (size_t i = 0; i < N; ++i) {
    if (targets[i] == ignore_index) continue;
    if (targets[i] < 0 || size_t(targets[i]) >= C)
      throw std::out_of_range(fmt::format(
          "[cross_entropy] target {} at row {} is not a class in [0, {}) nor ignore_index {}",
          targets[i], i, C, ignore_index));
    ++kept;
  }
  // Per-row loss = -(1-e) log p[target] - e mean_c log p[c], with log p = x - lse. Backward needs
  // the logits and each row's lse, not the (N, C) log-probabilities (an MLM head's are ~20 MB).
  const float e = label_smoothing;
  const Tensor x = detail::dense(logits, "cross_entropy").detach();
  auto lse = std::make_shared<std::vector<float>>(N);
  Tensor per_row = Tensor::empty({N});
  parallel_rows(N, C, [&](size_t r0, size_t r1) {
    for (size_t i = r0; i < r1; ++i) {
      const float* xr = x.data() + i * C;
      const float row_lse = (*lse)[i] = vec::log_sum_exp(xr, C);
      if (targets[i] == ignore_index) {
        per_row.data()[i] = 0.f;
        continue;
      }
      float loss = -(1.f - e) * (xr[targets[i]] - row_lse);
      if (e > 0.f)  // mean log p over the row, each term x - lse on its own: no cancellation
        loss -= e * float(vec::sum_shifted(xr, row_lse, C) / double(C));
      per_row.data()[i] = loss;
    }
  });
  const Shape in_shape = logits.shape();
  // d loss_i / d logits_i = softmax_i - ((1-e) onehot(target_i) + e/C), zero for ignored rows.
  Tensor loss_rows = record("cross_entropy", per_row, {logits}, {x},
                            [x, lse, targets, ignore_index, in_shape, N, C, e](const Tensor& g) -> std::vector<Tensor> {
                              Tensor dx = Tensor::empty(in_shape);
                              const float smooth = e > 0.f ? e / float(C) : 0.f;
                              parallel_rows(N, C, [&](size_t r0, size_t r1) {
                                for (size_t i = r0; i < r1; ++i) {
                                  float* d = dx.data() + i * C;
                                  if (targets[i] == ignore_index) {
                                    std::fill_n(d, C, 0.f);
                                    continue;
                                  }
                                  vec::cross_entropy_grad(x.data() + i * C, (*lse)[i], smooth,
                                                          size_t(targets[i]), 1.f - e, g.data()[i], d, C);
                                }
                              });
                              return {dx};
                            });
  Shape row_shape(in_shape.begin(), in_shape.end() - 1);
  if (reduction == Reduction::None)
    return reshape(loss_rows, std::vector<long>(row_shape.begin(), row_shape.end()));
  return reduce_loss(loss_rows, reduction, float(kept));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (input.shape() != target.shape())
    throw std::invalid_argument(fmt::format("[mse_loss] input {} and target {} differ in shape",
                                            shape_str(input.shape()), shape_str(target.shape())));
  const Tensor d = sub(input, target);
  return reduce_loss(mul(d, d), reduction, float(input.numel()));
}

Tensor bce_with_logits(const Tensor& logits, const Tensor& targets, Reduction reduction) {
  if (logits.shape() != targets.shape())
    throw std::invalid_argument(fmt::format("[bce_with_logits] logits {} and targets {} differ in shape",
                                            shape_str(logits.shape()), shape_str(targets.shape())));
  // loss = max(x, 0) - x*t + log(1 + exp(-|x|)): never overflows.
  const size_t n = logits.numel();
  Tensor per = Tensor::empty(logits.shape());
  const Tensor X = detail::dense(logits, "bce_with_logits").detach(),
               T = detail::dense(targets, "bce_with_logits").detach();
  const float *x = X.data(), *t = T.data();
  for (size_t i = 0; i < n; ++i)
    per.data()[i] = std::max(x[i], 0.f) - x[i] * t[i] + std::log1p(std::exp(-std::fabs(x[i])));
  const bool need_t = targets.requires_grad();
  Tensor per_rec = record("bce_with_logits", per, {logits, targets}, {X, logits.requires_grad() ? T : Tensor()},
                          [X, T, need_t](const Tensor& g) -> std::vector<Tensor> {
                            // d/dx = sigmoid(x) - t, d/dt = -x
                            Tensor s = Tensor::empty(X.shape());
                            vec::unary(vec::Unary::Sigmoid, X.data(), s.data(), X.numel());
                            return {mul(g, sub(s, T)), need_t ? mul(g, neg(X)) : Tensor()};
                          });
  return reduce_loss(per_rec, reduction, float(n));
}

Tensor cross_entropy_int64(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                           Reduction reduction, float label_smoothing) {
  if (targets.dtype() != Dtype::Int64)
    throw std::invalid_argument(fmt::format("[cross_entropy] targets must be int64, got {}", dtype_name(targets.dtype())));
  // Flat (one per row), or shaped as the logits without their class axis, as PyTorch wants.
  if (targets.dim() > 1 && logits.dim() > 0 && targets.shape() != Shape(logits.shape().begin(), logits.shape().end() - 1))
    throw std::invalid_argument(fmt::format("[cross_entropy] targets {} for logits {}: give them the logits' shape without "
                                            "the class axis, or one flat row of targets", shape_str(targets.shape()),
                                            shape_str(logits.shape())));
  return cross_entropy(logits, targets.to_ints(), ignore_index, reduction, label_smoothing);
}

}  // namespace xg
