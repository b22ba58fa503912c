#include "nn/init.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "nn/layers.hpp"

namespace xg::nn::init {

void normal_(Tensor& t, float mean, float std, Generator& gen) {
  float* p = t.data();
  for (size_t i = 0, n = t.numel(); i < n; ++i) p[i] = mean + std * gen.normal();
  t.bump_version();
}

void trunc_normal_(Tensor& t, float mean, float std, float a, float b, Generator& gen) {
  if (!(a < b) || !(std > 0.f) || mean + 6 * std < a || mean - 6 * std > b)
    throw std::invalid_argument(fmt::format(
        "[trunc_normal_] bounds [{}, {}] leave no mass for N({}, {})", a, b, mean, std));
  float* p = t.data();
  for (size_t i = 0, n = t.numel(); i < n; ++i) {
    float v;
    do v = mean + std * gen.normal();
    while (v < a || v > b);
    p[i] = v;
  }
  t.bump_version();
}

void zeros_(Tensor& t) {
  std::fill_n(t.data(), t.numel(), 0.f);
  t.bump_version();
}

void ones_(Tensor& t) {
  std::fill_n(t.data(), t.numel(), 1.f);
  t.bump_version();
}

void bert_init(Module& root, float std, Generator& gen) {
  root.apply([&](Module& m) {
    if (auto* l = dynamic_cast<Linear*>(&m)) {
      normal_(l->weight, 0.f, std, gen);
      if (l->bias.defined()) zeros_(l->bias);
    } else if (auto* e = dynamic_cast<Embedding*>(&m)) {
      normal_(e->weight, 0.f, std, gen);
      if (e->padding_idx >= 0) {
        const size_t dim = e->weight.size(1);
        std::fill_n(e->weight.data() + size_t(e->padding_idx) * dim, dim, 0.f);
      }
    } else if (auto* n = dynamic_cast<LayerNorm*>(&m)) {
      ones_(n->weight);
      zeros_(n->bias);
    }
  });
}

}  // namespace xg::nn::init
