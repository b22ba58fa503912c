#pragma once
// Basic layers. Parameter names follow PyTorch/Hugging Face: weight, bias.
#include <cstdint>
#include <memory>
#include <vector>

#include "autograd/kernels/vec.hpp"
#include "nn/module.hpp"

namespace xg::nn {

// y = x W^T + b, W (out, in). x (..., in).
class Linear : public UnaryModule {
 public:
  Linear(size_t in_features, size_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;  // bias undefined when disabled
  // The weight packed for the GEMM while an InferenceWeights holds it (nn/packed_weights.hpp).
  struct PackedWeight;
  std::shared_ptr<const PackedWeight> packed_weight;
};

// Rows of a (num, dim) table. Rows equal to padding_idx (when >= 0) get no gradient.
class Embedding : public Module {
 public:
  Embedding(size_t num_embeddings, size_t dim, int64_t padding_idx = -1);
  // ids laid out as ids_shape; returns ids_shape + [dim].
  Tensor forward(const std::vector<int64_t>& ids, const Shape& ids_shape);
  // ids: an int64 tensor of any shape; returns its shape + [dim].
  Tensor forward(const Tensor& ids);
  Tensor weight;
  int64_t padding_idx;
};

// Normalises the last axis, then scales and shifts (weight, bias).
class LayerNorm : public UnaryModule {
 public:
  explicit LayerNorm(size_t dim, float eps = 1e-12f);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  float eps;
};

// Inverted dropout while training; identity in eval mode. Draws from default_generator().
class Dropout : public UnaryModule {
 public:
  explicit Dropout(float p = 0.1f);
  Tensor forward(const Tensor& x) override;
  float p;
};

// An activation is a row of autograd/kernels/unary_ops.def with activation names (Gelu, GeluTanh,
// Relu, Tanh): the same kernel runs on the tape (apply_unary) and in the fused inference path.
using Activation = vec::Unary;
// Parses Hugging Face's hidden_act names, as the table lists them ("gelu", "gelu_new",
// "gelu_pytorch_tanh", "relu", "tanh", ...).
Activation activation_from_name(const std::string& name);
// The name written back to config.json (the row's first); throws for a kernel that is no activation.
std::string activation_name(Activation a);
Tensor activate(const Tensor& x, Activation a);

class ActivationLayer : public UnaryModule {
 public:
  explicit ActivationLayer(Activation a) : kind(a) {}
  Tensor forward(const Tensor& x) override { return activate(x, kind); }
  Activation kind;
};
inline std::shared_ptr<ActivationLayer> GELU(bool tanh_approx = false) {
  return std::make_shared<ActivationLayer>(tanh_approx ? Activation::GeluTanh : Activation::Gelu);
}
inline std::shared_ptr<ActivationLayer> ReLU() { return std::make_shared<ActivationLayer>(Activation::Relu); }
inline std::shared_ptr<ActivationLayer> Tanh() { return std::make_shared<ActivationLayer>(Activation::Tanh); }

}  // namespace xg::nn
