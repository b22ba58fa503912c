#pragma once
// Sentence embeddings from an encoder's last hidden states, as sentence-transformers' Pooling and
// Normalize modules compute them (all-MiniLM-L6-v2: mean pooling, then unit L2 norm).
#include <string>

#include "autograd/tensor.hpp"

namespace xg::models {

enum class Pooling { Cls, Mean };
// "cls" or "mean"; throws naming the text otherwise.
Pooling pooling_from_name(const std::string& name);

// (B, T, H) hidden states and a (B, T) 0/1 attention mask (undefined: no padding) -> (B, H):
// the first ([CLS]) token's vector, or the mean over the tokens the mask keeps. `normalize`
// then divides each row by its L2 norm (at least 1e-12, as torch.nn.functional.normalize).
// Sums in double; no autograd graph.
Tensor pool_sentences(const Tensor& hidden, const Tensor& attention_mask, Pooling pooling, bool normalize);

}  // namespace xg::models
