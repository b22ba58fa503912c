#pragma once
// In-place initialisers and BERT's initialisation scheme.
#include "nn/module.hpp"

namespace xg::nn::init {

void normal_(Tensor& t, float mean, float std, Generator& gen = default_generator());
// Normal(mean, std) redrawn until inside [a, b] (absolute bounds, as torch.nn.init.trunc_normal_).
void trunc_normal_(Tensor& t, float mean, float std, float a = -2.f, float b = 2.f,
                   Generator& gen = default_generator());
void zeros_(Tensor& t);
void ones_(Tensor& t);

// BERT's scheme over every sub-module: Linear and Embedding weights ~ N(0, std) (the padding row
// zeroed), biases 0, LayerNorm weight 1 and bias 0.
void bert_init(Module& m, float std = 0.02f, Generator& gen = default_generator());

}  // namespace xg::nn::init
