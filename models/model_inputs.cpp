#include "models/model_inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace xg::models {

namespace {
void check_size(const char* field, size_t size, size_t batch, size_t seq_len, bool may_be_empty) {
  if (size == batch * seq_len || (may_be_empty && size == 0)) return;
  throw std::invalid_argument(fmt::format("[inputs] {} {} for a {} x {} batch", size, field, batch, seq_len));
}

void check_range(const char* what, const std::vector<int64_t>& ids, size_t limit, const char* limit_name) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || size_t(ids[i]) >= limit)
      throw std::out_of_range(fmt::format("[inputs] {} {} at position {} is outside {} {}", what, ids[i], i, limit_name, limit));
}
}  // namespace

void ModelInputs::validate(const InputLimits& limits) const {
  if (batch == 0 || seq_len == 0) throw std::invalid_argument(fmt::format("[inputs] empty batch ({} x {})", batch, seq_len));
  if (position_ids.empty() && seq_len > limits.max_positions)
    throw std::invalid_argument(
        fmt::format("[inputs] sequence length {} exceeds max_position_embeddings {}", seq_len, limits.max_positions));
  check_size("input_ids", input_ids.size(), batch, seq_len, false);
  check_size("token_type_ids", token_type_ids.size(), batch, seq_len, true);
  check_size("position_ids", position_ids.size(), batch, seq_len, true);
  if (attention_mask.defined() && attention_mask.shape() != Shape{batch, seq_len})
    throw std::invalid_argument(fmt::format("[inputs] attention_mask has shape {}, expected [{}, {}]",
                                            shape_str(attention_mask.shape()), batch, seq_len));
  check_range("input id", input_ids, limits.vocab_size, "the vocabulary of");
  check_range("token type", token_type_ids, limits.type_vocab_size, "type_vocab_size");
  check_range("position id", position_ids, limits.max_positions, "max_position_embeddings");
}

ModelInputs make_inputs(size_t batch, size_t seq_len, std::vector<int64_t> input_ids, std::vector<int64_t> token_type_ids,
                        const std::vector<int64_t>& attention_mask, std::vector<int64_t> position_ids) {
  ModelInputs in;
  in.batch = batch;
  in.seq_len = seq_len;
  in.input_ids = std::move(input_ids);
  in.token_type_ids = std::move(token_type_ids);
  in.position_ids = std::move(position_ids);
  if (!attention_mask.empty()) {
    check_size("attention_mask values", attention_mask.size(), batch, seq_len, false);
    in.attention_mask = Tensor::empty({batch, seq_len});
    for (size_t i = 0; i < attention_mask.size(); ++i) in.attention_mask.data()[i] = attention_mask[i] != 0 ? 1.f : 0.f;
  }
  return in;
}

ModelInputs pad_sequences(const std::vector<Sequence>& sequences, int64_t pad_id, size_t seq_len) {
  if (seq_len == 0)
    for (const auto& s : sequences) seq_len = std::max(seq_len, s.ids.size());
  const size_t B = sequences.size();
  std::vector<int64_t> ids(B * seq_len, pad_id), types(B * seq_len, 0), mask(B * seq_len, 0);
  for (size_t b = 0; b < B; ++b) {
    const Sequence& s = sequences[b];
    if (s.ids.size() > seq_len)
      throw std::invalid_argument(fmt::format("[inputs] sequence {} has {} tokens, more than the length {}", b, s.ids.size(), seq_len));
    if (!s.type_ids.empty() && s.type_ids.size() != s.ids.size())
      throw std::invalid_argument(fmt::format("[inputs] sequence {} has {} ids but {} type ids", b, s.ids.size(), s.type_ids.size()));
    std::copy(s.ids.begin(), s.ids.end(), ids.begin() + long(b * seq_len));
    std::copy(s.type_ids.begin(), s.type_ids.end(), types.begin() + long(b * seq_len));
    std::fill_n(mask.begin() + long(b * seq_len), s.ids.size(), 1);
  }
  return make_inputs(B, seq_len, std::move(ids), std::move(types), mask);
}

}  // namespace xg::models
