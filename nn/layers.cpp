#include "nn/layers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "autograd/engine.hpp"
#include "nn/init.hpp"
#include "nn/packed_weights.hpp"

namespace xg::nn {

Linear::Linear(size_t in_features, size_t out_features, bool with_bias) {
  if (in_features == 0 || out_features == 0)
    throw std::invalid_argument(fmt::format("[Linear] sizes must be positive, got in={} out={}",
                                            in_features, out_features));
  // PyTorch's default: U(-1/sqrt(in), 1/sqrt(in)) for both.
  const float bound = 1.f / std::sqrt(float(in_features));
  weight = register_parameter("weight", Tensor::uniform({out_features, in_features}, -bound, bound));
  if (with_bias) bias = register_parameter("bias", Tensor::uniform({out_features}, -bound, bound));
}

Tensor Linear::forward(const Tensor& x) {
  if (x.dim() == 0 || x.shape().back() != weight.size(1))
    throw std::invalid_argument(fmt::format("[Linear] input {} does not end in in_features={}",
                                            shape_str(x.shape()), weight.size(1)));
  if (!grad_enabled())
    if (auto packed = packed_weight_for(*this)) return linear(x, *packed, bias);
  return linear(x, weight, bias);
}

Embedding::Embedding(size_t num, size_t dim, int64_t pad) : padding_idx(pad) {
  if (num == 0 || dim == 0)
    throw std::invalid_argument(fmt::format("[Embedding] sizes must be positive, got {}x{}", num, dim));
  if (pad >= int64_t(num))
    throw std::invalid_argument(fmt::format("[Embedding] padding_idx {} >= num_embeddings {}", pad, num));
  if (pad < -1)  // PyTorch counts a negative index from the end; here -1 means none, so no other is taken
    throw std::invalid_argument(fmt::format("[Embedding] padding_idx {} is negative: give a row in [0, {}), or -1 for none",
                                            pad, num));
  weight = register_parameter("weight", Tensor::normal({num, dim}));
  if (pad >= 0) std::fill_n(weight.data() + size_t(pad) * dim, dim, 0.f);
}

Tensor Embedding::forward(const std::vector<int64_t>& ids, const Shape& ids_shape) {
  return embedding(weight, ids, ids_shape, padding_idx);
}

Tensor Embedding::forward(const Tensor& ids) { return embedding(weight, ids, padding_idx); }

LayerNorm::LayerNorm(size_t dim, float e) : eps(e) {
  weight = register_parameter("weight", Tensor::ones({dim}));
  bias = register_parameter("bias", Tensor::zeros({dim}));
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, weight, bias, eps); }

Dropout::Dropout(float prob) : p(prob) {
  if (!(p >= 0.f && p <= 1.f))
    throw std::invalid_argument(fmt::format("[Dropout] probability {} is not in [0, 1]", p));
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training()); }

namespace {
// Each unary kernel's activation names (unary_ops.def), empty for a kernel that is no activation.
struct ActivationNames {
  Activation kernel;
  std::vector<const char*> names;
};
const std::vector<ActivationNames>& activation_table() {
  static const std::vector<ActivationNames> table = {
#define XG_UNARY(name, grad, from, op, ...) {vec::Unary::name, {__VA_ARGS__}},
#include "autograd/kernels/unary_ops.def"
#undef XG_UNARY
  };
  return table;
}
}  // namespace

Activation activation_from_name(const std::string& name) {
  std::vector<std::string> known;
  for (const auto& row : activation_table())
    for (const char* n : row.names) {
      if (name == n) return row.kernel;
      known.emplace_back(n);
    }
  throw std::invalid_argument(fmt::format("[activation] unknown activation '{}' (known: {})", name, fmt::join(known, ", ")));
}

std::string activation_name(Activation a) {
  for (const auto& row : activation_table())
    if (row.kernel == a && !row.names.empty()) return row.names.front();
  throw std::invalid_argument(fmt::format("[activation] {} is not an activation", vec::op_name(a)));
}

Tensor activate(const Tensor& x, Activation a) { return apply_unary(a, x); }

}  // namespace xg::nn
