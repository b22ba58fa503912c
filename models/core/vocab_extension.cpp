#include "models/core/vocab_extension.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "models/core/registry.hpp"

namespace xg::models {

namespace {

// `from` (V rows) grown to V + N rows: rows below V copied, row V + i the mean of pieces[i]'s.
Tensor grow_rows(const Tensor& from, const std::vector<std::vector<int32_t>>& pieces) {
  Shape shape = from.shape();
  const size_t old_rows = shape[0], row = from.numel() / old_rows;
  shape[0] += pieces.size();
  Tensor to = Tensor::zeros(shape);
  const float* src = from.data();
  float* dst = to.data();
  std::copy(src, src + from.numel(), dst);
  for (size_t i = 0; i < pieces.size(); ++i) {
    float* out = dst + (old_rows + i) * row;
    for (const int32_t p : pieces[i])
      for (size_t k = 0; k < row; ++k) out[k] += src[size_t(p) * row + k];
    const float scale = 1.f / float(pieces[i].size());
    for (size_t k = 0; k < row; ++k) out[k] *= scale;
  }
  return to;
}

bool grown_by_rows(const Shape& from, const Shape& to, size_t added) {
  return !from.empty() && from.size() == to.size() && to[0] == from[0] + added &&
         std::equal(from.begin() + 1, from.end(), to.begin() + 1);
}

}  // namespace

std::unique_ptr<PretrainedModel> with_new_tokens(const PretrainedModel& model, const std::vector<std::vector<int32_t>>& pieces) {
  nlohmann::json config = model.config_json();
  const size_t old_vocab = config.at("vocab_size").get<size_t>();
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].empty()) throw std::invalid_argument(fmt::format("[vocab extension] new token {} has no pieces", i));
    for (const int32_t p : pieces[i])
      if (p < 0 || size_t(p) >= old_vocab)
        throw std::invalid_argument(fmt::format("[vocab extension] new token {}: piece id {} is outside the vocabulary of {}",
                                                i, p, old_vocab));
  }
  config["vocab_size"] = old_vocab + pieces.size();
  auto grown = build_model(config, "vocab extension", model.architecture());
  // Every tensor of the grown model from the old one: same shape as it is, vocabulary-indexed ones
  // grown by rows (tied tensors appear under each of their names, with the same values).
  nn::StateDict state;
  const nn::StateDict old_state = model.state_dict();
  for (const auto& [name, t] : grown->state_dict()) {
    const Tensor& from = old_state.at(name);
    if (from.shape() == t.shape()) state[name] = from;
    else if (grown_by_rows(from.shape(), t.shape(), pieces.size()) && from.shape()[0] == old_vocab) state[name] = grow_rows(from, pieces);
    else throw std::logic_error(fmt::format("[vocab extension] {} changed shape with vocab_size: {} -> {}", name,
                                            fmt::join(from.shape(), "x"), fmt::join(t.shape(), "x")));
  }
  grown->load_state_dict(state);
  grown->train(model.is_training());
  return grown;
}

}  // namespace xg::models
