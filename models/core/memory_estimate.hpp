#pragma once
// Rough memory a model needs for a training step or a forward pass, from its config.json, so that
// absurd sizes (a batch of 100 million, a sequence of 65,535 tokens on base) end in a message
// naming the sizes and the estimate instead of std::bad_alloc or the machine swapping.
#include <nlohmann/json.hpp>

#include <string>

namespace xg::models {

struct MemoryEstimate {
  double parameters = 0;   // bytes of weights (and, training, their gradients and two Adam moments)
  double activations = 0;  // bytes of what the batch keeps alive
  double total() const { return parameters + activations; }
};

// A training step: weights, gradients and two Adam moments; per layer and sequence the activations
// kept for backward (hidden-sized tensors, the feed-forward's, and the attention's scores and
// probabilities when it runs unfused; one layer's with `checkpoint_activations`, plus each layer's
// input); `max_predictions` rows of vocabulary logits per sequence (MLM). It over-estimates the
// measured peaks of BERT-Base (docs/benchmarks.md, "Long sequences and memory") by 10% at 8 x 128
// and 31% at 8 x 512 with multi_head_attention, by 20 to 35% unfused.
MemoryEstimate training_memory(const nlohmann::json& config, size_t batch, size_t seq_len, size_t max_predictions,
                               bool checkpoint_activations);

// A forward pass without a tape: the weights and one layer's activations at a time.
MemoryEstimate inference_memory(const nlohmann::json& config, size_t batch, size_t seq_len);

// Throws std::invalid_argument when `need` is more than twice this machine's memory (the estimate
// is rough: only what cannot be near is refused). `what` names the work ("training", "inference")
// and `sizes` the flags behind the activations ("--per-device-train-batch-size 8 x
// --max-seq-length 128"); empty: the model alone.
void refuse_if_too_big(const MemoryEstimate& need, const nlohmann::json& config, const std::string& what,
                       const std::string& sizes);

}  // namespace xg::models
