#include "training/batch.hpp"

#include <fmt/format.h>

#include <cmath>

namespace xg::training {

Batch make_batch(const std::vector<text::Instance>& instances, size_t seq_len, int32_t pad_id) {
  Batch b;
  std::vector<models::Sequence> sequences(instances.size());
  std::vector<int64_t> positions, labels, sentence_labels;
  for (size_t i = 0; i < instances.size(); ++i) {
    const auto& inst = instances[i];
    if (inst.tokens.size() > seq_len)
      throw std::invalid_argument(fmt::format("[batch] an instance has {} tokens, more than --max-seq-length {}", inst.tokens.size(), seq_len));
    for (size_t t = 0; t < inst.tokens.size(); ++t) {
      sequences[i].ids.push_back(inst.tokens[t]);
      sequences[i].type_ids.push_back(inst.segment_id(t));
    }
    for (size_t k = 0; k < inst.masked_positions.size(); ++k) {
      positions.push_back(int64_t(i * seq_len) + inst.masked_positions[k]);
      labels.push_back(inst.masked_labels[k]);
    }
    sentence_labels.push_back(inst.is_random_next ? 1 : 0);
    b.real_tokens += inst.tokens.size();
  }
  b.inputs = models::pad_sequences(sequences, pad_id, seq_len);
  b.targets = models::make_pretraining_targets(positions, labels, sentence_labels);
  return b;
}

Batch random_batch(size_t batch, size_t seq_len, size_t vocab_size, size_t type_vocab_size, Generator& gen) {
  Batch b;
  b.inputs = models::random_inputs(batch, seq_len, vocab_size, type_vocab_size, gen);
  b.real_tokens = batch * seq_len;
  std::vector<int64_t> positions, labels, sentence_labels;
  const size_t predictions = std::max<size_t>(1, size_t(std::lround(0.15 * double(seq_len))));
  for (size_t i = 0; i < batch; ++i) {
    for (size_t k = 0; k < predictions; ++k) {  // evenly spread positions, random labels
      positions.push_back(int64_t(i * seq_len + (k * seq_len) / predictions));
      labels.push_back(int64_t(gen.below(vocab_size)));
    }
    sentence_labels.push_back(int64_t(gen.below(2)));
  }
  b.targets = models::make_pretraining_targets(positions, labels, sentence_labels);
  return b;
}

}  // namespace xg::training
