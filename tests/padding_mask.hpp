#pragma once
// An additive padding mask for the attention tests.
#include <vector>

#include "autograd/xgrad.hpp"
#include "nn/transformer.hpp"

namespace xg::test {

// Additive (B, T) mask: sequence b attends to its first lengths[b] keys.
inline Tensor padding_mask(const std::vector<size_t>& lengths, size_t T) {
  std::vector<float> attended(lengths.size() * T, 0.f);
  for (size_t b = 0; b < lengths.size(); ++b)
    for (size_t j = 0; j < lengths[b]; ++j) attended[b * T + j] = 1.f;
  return nn::additive_attention_mask(Tensor::from_vector(attended, {lengths.size(), T}));
}

}  // namespace xg::test
