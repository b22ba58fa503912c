#pragma once
// Multi-head self-attention and the Transformer encoder, laid out module by module as Hugging
// Face's BERT so parameter names match its checkpoints:
//   layer.N.attention.self.{query,key,value}, layer.N.attention.output.{dense,LayerNorm},
//   layer.N.intermediate.dense, layer.N.output.{dense,LayerNorm}
#include "nn/layers.hpp"

namespace xg::nn {

struct TransformerOptions {
  size_t hidden_size = 768;
  size_t num_heads = 12;
  size_t intermediate_size = 3072;
  float hidden_dropout = 0.1f;
  float attention_dropout = 0.1f;
  float layer_norm_eps = 1e-12f;
  Activation activation = Activation::Gelu;
  bool pre_layer_norm = false;  // BERT is post-LN: LayerNorm(x + sublayer(x))
  // Throws naming the field when a size is zero or hidden_size % num_heads != 0.
  void validate() const;
};

// The additive mask attention wants from a (B, T) 0/1 attention mask: 0 where attended, the
// lowest float where padded (as Hugging Face does), so padded keys get exactly zero weight.
Tensor additive_attention_mask(const Tensor& attention_mask);

// Scaled dot-product self-attention over num_heads heads: the "self" module of BERT.
class SelfAttention : public Module {
 public:
  explicit SelfAttention(const TransformerOptions& opt);
  // x (B, T, H); mask undefined or additive (B, T). Returns the context (B, T, H).
  Tensor forward(const Tensor& x, const Tensor& mask);
  std::shared_ptr<Linear> query, key, value;
  size_t num_heads;
  float attention_dropout;
};

// dense + dropout (+ residual and LayerNorm in post-LN): BERT's SelfOutput and Output modules.
class ProjectResidual : public Module {
 public:
  ProjectResidual(size_t in, size_t out, const TransformerOptions& opt);
  // post-LN: LayerNorm(dropout(dense(h)) + residual); pre-LN: dropout(dense(h)) + residual.
  Tensor forward(const Tensor& h, const Tensor& residual);
  std::shared_ptr<Linear> dense;
  std::shared_ptr<LayerNorm> layer_norm;  // registered as "LayerNorm"
  float dropout_p;
  bool pre_layer_norm;
};

class Attention : public Module {
 public:
  explicit Attention(const TransformerOptions& opt);
  std::shared_ptr<SelfAttention> self;
  std::shared_ptr<ProjectResidual> output;
};

class Intermediate : public UnaryModule {
 public:
  explicit Intermediate(const TransformerOptions& opt);
  Tensor forward(const Tensor& x) override { return activate(dense->forward(x), act); }
  std::shared_ptr<Linear> dense;
  Activation act;
};

class EncoderLayer : public Module {
 public:
  explicit EncoderLayer(const TransformerOptions& opt);
  // x (B, T, H), mask undefined or additive (B, T).
  Tensor forward(const Tensor& x, const Tensor& mask);
  std::shared_ptr<Attention> attention;
  std::shared_ptr<Intermediate> intermediate;
  std::shared_ptr<ProjectResidual> output;
  bool pre_layer_norm;
};

// A stack of encoder layers ("layer.0", "layer.1", ...). Pre-LN stacks end with a LayerNorm
// ("final_layer_norm"), as pre-LN Transformers need.
class Encoder : public Module {
 public:
  Encoder(const TransformerOptions& opt, size_t num_layers);
  // x (B, T, H), mask undefined or additive (B, T). For inference (gradients off, eval mode) under
  // a padding mask it runs nn/fused_encoder.hpp's packed path, whose rows at padded positions are
  // zero (no head reads them; transformers computes values there, which the recorded path gives
  // with nn::FusedInferenceGuard(false)).
  Tensor forward(const Tensor& x, const Tensor& mask);
  std::shared_ptr<ModuleList<EncoderLayer>> layer;
  std::shared_ptr<LayerNorm> final_layer_norm;  // pre-LN only
  // Gradient checkpointing: in training, each layer keeps only its input and is recomputed in
  // the backward pass (one more forward per layer, activations of one layer at a time).
  bool checkpoint_activations = false;
};

}  // namespace xg::nn
