#include "models/core/model_inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace xg::models {

namespace {
void check_size(const char* field, size_t size, size_t batch, size_t seq_len, bool may_be_empty) {
  if (size == batch * seq_len || (may_be_empty && size == 0)) return;
  throw std::invalid_argument(fmt::format("[inputs] {} {} for a {} x {} batch", size, field, batch, seq_len));
}

// An optional (B, T) field: undefined, or of `dtype` and input_ids' shape.
bool check_field(const char* field, const Tensor& t, Dtype dtype, const Shape& bt) {
  if (!t.defined()) return false;
  if (t.dtype() != dtype)
    throw std::invalid_argument(fmt::format("[inputs] {} is {}, expected {}", field, dtype_name(t.dtype()), dtype_name(dtype)));
  if (t.shape() != bt)
    throw std::invalid_argument(fmt::format("[inputs] {} has shape {}, expected {}", field, shape_str(t.shape()), shape_str(bt)));
  return true;
}

void check_range(const char* what, const Tensor& ids, size_t limit, const char* limit_name) {
  const std::vector<int64_t> v = ids.to_ints();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] < 0 || size_t(v[i]) >= limit)
      throw std::out_of_range(fmt::format("[inputs] {} {} at position {} is outside {} {}", what, v[i], i, limit_name, limit));
}
}  // namespace

size_t ModelInputs::batch() const { return input_ids.defined() ? input_ids.size(0) : 0; }
size_t ModelInputs::seq_len() const { return input_ids.defined() ? input_ids.size(1) : 0; }

void ModelInputs::validate(const InputLimits& limits) const {
  if (!input_ids.defined() || input_ids.dim() != 2 || input_ids.numel() == 0)
    throw std::invalid_argument(fmt::format("[inputs] input_ids must be a non-empty (batch, length) tensor, got {}",
                                            input_ids.defined() ? shape_str(input_ids.shape()) : "none"));
  const Shape bt = input_ids.shape();
  check_field("input_ids", input_ids, Dtype::Int64, bt);
  const bool types = check_field("token_type_ids", token_type_ids, Dtype::Int64, bt);
  const bool positions = check_field("position_ids", position_ids, Dtype::Int64, bt);
  check_field("attention_mask", attention_mask, Dtype::Float32, bt);
  if (!positions && limits.first_position + seq_len() > limits.max_positions)
    throw std::invalid_argument(fmt::format("[inputs] sequence length {} exceeds max_position_embeddings {}{}", seq_len(),
                                            limits.max_positions,
                                            limits.first_position ? fmt::format(" (positions start at {})", limits.first_position) : ""));
  check_range("input id", input_ids, limits.vocab_size, "the vocabulary of");
  if (types) check_range("token type", token_type_ids, limits.type_vocab_size, "type_vocab_size");
  if (positions) check_range("position id", position_ids, limits.max_positions, "max_position_embeddings");
}

ModelInputs make_inputs(size_t batch, size_t seq_len, std::vector<int64_t> input_ids, std::vector<int64_t> token_type_ids,
                        const std::vector<int64_t>& attention_mask, std::vector<int64_t> position_ids) {
  check_size("input_ids", input_ids.size(), batch, seq_len, false);
  check_size("token_type_ids", token_type_ids.size(), batch, seq_len, true);
  check_size("position_ids", position_ids.size(), batch, seq_len, true);
  check_size("attention_mask values", attention_mask.size(), batch, seq_len, true);
  const Shape bt{batch, seq_len};
  ModelInputs in;
  in.input_ids = Tensor::from_ints(input_ids, bt);
  if (!token_type_ids.empty()) in.token_type_ids = Tensor::from_ints(token_type_ids, bt);
  if (!position_ids.empty()) in.position_ids = Tensor::from_ints(position_ids, bt);
  if (!attention_mask.empty()) {
    in.attention_mask = Tensor::empty(bt);
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

ModelInputs random_inputs(size_t batch, size_t seq_len, size_t vocab_size, size_t type_vocab_size, Generator& gen) {
  std::vector<int64_t> ids, types;
  for (size_t i = 0; i < batch * seq_len; ++i) {
    ids.push_back(int64_t(gen.below(vocab_size)));
    types.push_back(i % seq_len < seq_len / 2 || type_vocab_size < 2 ? 0 : 1);
  }
  return make_inputs(batch, seq_len, std::move(ids), std::move(types), std::vector<int64_t>(batch * seq_len, 1));
}

}  // namespace xg::models
