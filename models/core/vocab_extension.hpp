#pragma once
// Growing a model's vocabulary for new tokens (domain-adaptive pre-training): every tensor indexed
// by token id (the input embeddings, an untied MLM decoder, the MLM bias) gains one row per new
// token, the mean of the rows of the pieces the old tokenizer split that token into; rows of
// existing ids are unchanged, so old token ids keep their meaning. A tied decoder grows with the
// embeddings it shares.
#include <cstdint>
#include <memory>
#include <vector>

#include "models/core/pretrained.hpp"

namespace xg::models {

// A copy of `model` (same class and config, vocab_size grown by pieces.size()) whose row for new
// token `old_vocab_size + i` is the mean of the rows `pieces[i]`. Throws naming a piece id outside
// the old vocabulary or an empty piece list.
std::unique_ptr<PretrainedModel> with_new_tokens(const PretrainedModel& model,
                                                 const std::vector<std::vector<int32_t>>& pieces);

}  // namespace xg::models
