#include "models/core/memory_estimate.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <stdexcept>

#include "nn/execution.hpp"

namespace xg::models {

namespace {
// Sizes the memory depends on, from config.json (every family has these fields; ALBERT's shared
// layers make the estimate high, which only makes the refusal rarer). In double: absurd sizes must
// not wrap.
struct ModelShape {
  double hidden, layers, intermediate, heads, vocab, positions, types;
  static ModelShape of(const nlohmann::json& j) {
    auto get = [&](const char* k, double fallback) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : fallback; };
    return {get("hidden_size", 768), get("num_hidden_layers", 12), get("intermediate_size", 3072),
            get("num_attention_heads", 12), get("vocab_size", 30522), get("max_position_embeddings", 512),
            get("type_vocab_size", 2)};
  }
  double parameters() const {
    return (vocab + positions + types) * hidden + layers * (4 * hidden * hidden + 2 * hidden * intermediate) + vocab + hidden * hidden;
  }
  // multi_head_attention keeps one log-sum-exp per query and head, the unfused one (T, T) weights
  double attention(double t, double copies) const {
    return nn::default_execution().flash_attention ? heads * t : heads * t * t * copies;  // as a new model runs
  }
};

double physical_memory_bytes() { return double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE)); }
}  // namespace

MemoryEstimate training_memory(const nlohmann::json& config, size_t batch, size_t seq_len, size_t max_predictions,
                               bool checkpoint_activations) {
  const ModelShape c = ModelShape::of(config);
  const double h = c.hidden, t = double(seq_len);
  const double per_layer = t * h * 20 + t * c.intermediate * 3 + c.attention(t, 3);
  const double per_sequence = (checkpoint_activations ? per_layer + c.layers * t * h : c.layers * per_layer) +
                              double(max_predictions) * c.vocab * 3;
  return {c.parameters() * 4 * 4, double(batch) * per_sequence * 4};
}

MemoryEstimate inference_memory(const nlohmann::json& config, size_t batch, size_t seq_len) {
  const ModelShape c = ModelShape::of(config);
  const double t = double(seq_len);
  const double per_sequence = t * c.hidden * 8 + t * c.intermediate * 2 + c.attention(t, 1);
  return {c.parameters() * 4, double(batch) * per_sequence * 4};
}

void refuse_if_too_big(const MemoryEstimate& need, const nlohmann::json& config, const std::string& what,
                       const std::string& sizes) {
  const double have = physical_memory_bytes();
  if (need.total() <= 2 * have) return;
  const ModelShape c = ModelShape::of(config);
  const std::string activations = sizes.empty() ? "" : fmt::format("; {:.3g} GB of activations for {}", need.activations / 1e9, sizes);
  throw std::invalid_argument(fmt::format(
      "{} needs about {:.3g} GB ({:.3g} GB for the weights{} of {} layers of hidden_size {}, intermediate_size {}, "
      "vocab_size {}, max_position_embeddings {}{}), more than twice this machine's {:.3g} GB of memory",
      what, need.total() / 1e9, need.parameters / 1e9, what == "training" ? ", gradients and optimizer state" : "", c.layers,
      c.hidden, c.intermediate, c.vocab, c.positions, activations, have / 1e9));
}

}  // namespace xg::models
