#include "models/core/sentence_embedding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace xg::models {

Pooling pooling_from_name(const std::string& name) {
  if (name == "cls") return Pooling::Cls;
  if (name == "mean") return Pooling::Mean;
  throw std::invalid_argument(fmt::format("[pool_sentences] unknown pooling '{}' (cls, mean)", name));
}

Tensor pool_sentences(const Tensor& hidden, const Tensor& attention_mask, Pooling pooling, bool normalize) {
  if (hidden.dim() != 3) throw std::invalid_argument(fmt::format("[pool_sentences] hidden states of shape {}, not (B, T, H)", shape_str(hidden.shape())));
  const size_t B = hidden.size(0), T = hidden.size(1), H = hidden.size(2);
  const Tensor h = hidden.is_contiguous() ? hidden : hidden.clone();
  Tensor mask;
  if (attention_mask.defined()) {
    if (attention_mask.shape() != Shape{B, T})
      throw std::invalid_argument(fmt::format("[pool_sentences] attention mask of shape {} for hidden states {}",
                                              shape_str(attention_mask.shape()), shape_str(hidden.shape())));
    mask = attention_mask.is_contiguous() ? attention_mask : attention_mask.clone();
  }
  Tensor out = Tensor::empty({B, H});
  std::vector<double> v(H);
  for (size_t b = 0; b < B; ++b) {
    std::fill(v.begin(), v.end(), 0.0);
    double kept = 0;
    for (size_t t = 0; t < (pooling == Pooling::Cls ? std::min<size_t>(T, 1) : T); ++t) {
      const double w = pooling == Pooling::Cls || !mask.defined() ? 1.0 : mask.data()[b * T + t];
      if (w == 0) continue;
      for (size_t i = 0; i < H; ++i) v[i] += w * h.data()[(b * T + t) * H + i];
      kept += w;
    }
    // sentence-transformers clamps the token count at 1e-9: an all-padding row pools to zeros.
    double norm = 0;
    for (double& x : v) {
      x /= std::max(kept, 1e-9);
      norm += x * x;
    }
    const double scale = normalize ? 1.0 / std::max(std::sqrt(norm), 1e-12) : 1.0;
    for (size_t i = 0; i < H; ++i) out.data()[b * H + i] = float(v[i] * scale);
  }
  return out;
}

}  // namespace xg::models
