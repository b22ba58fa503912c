#pragma once
// What an encoder model reads: a batch of B sequences of T token ids, with segment ids, an optional
// padding mask and optional position ids, each a (B, T) tensor (ids int64, as Hugging Face's
// input_ids). Every program, trainer and test builds them with make_inputs or pad_sequences below,
// so masks and padding are made in one place.
#include <vector>

#include "autograd/tensor.hpp"
#include "util/random.hpp"

namespace xg::models {

// The ranges a model accepts (from its config).
struct InputLimits {
  size_t vocab_size = 0, type_vocab_size = 0, max_positions = 0;
  size_t first_position = 0;  // default positions start here (RoBERTa: padding_idx + 1)
};

struct ModelInputs {
  Tensor input_ids;       // (B, T) int64
  Tensor token_type_ids;  // (B, T) int64, or undefined for all zeros
  Tensor position_ids;    // (B, T) int64, or undefined for the family's default (BERT: 0..T-1)
  Tensor attention_mask;  // (B, T) float32 of 0/1, or undefined for no padding
  size_t batch() const;
  size_t seq_len() const;
  // Throws naming the field when a dtype or shape is wrong or ids fall outside `limits`.
  void validate(const InputLimits& limits) const;
};

// Rows already padded to T: ids (B*T); types, mask (0/1) and positions may be empty.
ModelInputs make_inputs(size_t batch, size_t seq_len, std::vector<int64_t> input_ids,
                        std::vector<int64_t> token_type_ids = {}, const std::vector<int64_t>& attention_mask = {},
                        std::vector<int64_t> position_ids = {});

// One sequence before padding: its ids and segment ids (empty: all 0).
struct Sequence {
  std::vector<int64_t> ids, type_ids;
};

// Pads every sequence with pad_id to seq_len (0: the longest one's length); the attention mask
// is 1 on real tokens, and padding gets segment 0. Throws if a sequence is longer than seq_len.
ModelInputs pad_sequences(const std::vector<Sequence>& sequences, int64_t pad_id, size_t seq_len = 0);

// Random ids below vocab_size in every position of batch rows of seq_len, all real tokens (an
// all-ones mask, so timings include the masked attention real batches use); the second half of
// each row segment 1 where the model has two token types. For benchmarks: no data loading.
ModelInputs random_inputs(size_t batch, size_t seq_len, size_t vocab_size, size_t type_vocab_size, Generator& gen);

}  // namespace xg::models
