#pragma once
// Turning pre-training instances into model batches.
#include <vector>

#include "models/core/pretraining.hpp"
#include "text/pretraining_data.hpp"

namespace xg::training {

struct Batch {
  models::ModelInputs inputs;
  models::PretrainingTargets targets;
  size_t real_tokens = 0;  // non-padding tokens
};

// Pads every instance to seq_len (throws if one is longer); segment ids from each instance's A/B
// split; masked positions flattened to b * seq_len + t.
Batch make_batch(const std::vector<text::Instance>& instances, size_t seq_len, int32_t pad_id);

// models::random_inputs with pre-training's shape of targets (15% of positions predicted,
// sentence labels), for benchmarks.
Batch random_batch(size_t batch, size_t seq_len, size_t vocab_size, size_t type_vocab_size, Generator& gen);

}  // namespace xg::training
