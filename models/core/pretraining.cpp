#include "models/core/pretraining.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <utility>

#include "autograd/kernels/vec.hpp"
#include "autograd/ops.hpp"
#include "autograd/parallel.hpp"

namespace xg::models {

PretrainingTargets make_pretraining_targets(const std::vector<int64_t>& masked_positions,
                                            const std::vector<int64_t>& masked_labels,
                                            const std::vector<int64_t>& sentence_labels) {
  return {Tensor::from_ints(masked_positions, {masked_positions.size()}),
          Tensor::from_ints(masked_labels, {masked_labels.size()}),
          Tensor::from_ints(sentence_labels, {sentence_labels.size()})};
}

std::string sentence_task_name(SentenceTask t) {
  switch (t) {
    case SentenceTask::NextSentence: return "nsp";
    case SentenceTask::SentenceOrder: return "sop";
    case SentenceTask::None: break;
  }
  return "none";
}

size_t count_correct(const Tensor& logits, const Tensor& label_tensor) {
  const size_t C = logits.size(-1);
  const int64_t* labels = label_tensor.data_as<int64_t>();
  std::atomic<size_t> correct{0};
  parallel_rows(label_tensor.numel(), C, [&](size_t r0, size_t r1) {  // mini's MLM logits: 160 x 30522
    size_t here = 0;
    for (size_t i = r0; i < r1; ++i) {
      // Right when the label's logit is the row's maximum and no earlier one equals it (argmax
      // takes the first): one SIMD pass, and a scan of the prefix only for right answers. A row
      // with a NaN logit gets no defined answer (the loss is NaN then too).
      const float* row = logits.data() + i * C;
      const int64_t label = labels[i];
      if (label < 0 || size_t(label) >= C) continue;  // ignored or out of range: never an argmax
      const float best = vec::max(row, C);
      here += row[label] == best && std::find(row, row + label, best) == row + label;
    }
    correct += here;
  });
  return correct;
}

void check_pretraining_targets(const ModelInputs& in, const PretrainingTargets& t, SentenceTask sentence_task,
                               const std::string& who) {
  std::vector<std::pair<const char*, const Tensor*>> fields = {{"masked_positions", &t.masked_positions},
                                                                {"masked_labels", &t.masked_labels}};
  if (sentence_task != SentenceTask::None) fields.emplace_back("sentence_labels", &t.sentence_labels);
  for (const auto& [name, tensor] : fields)
    if (!tensor->defined() || tensor->dtype() != Dtype::Int64 || tensor->dim() != 1)
      throw std::invalid_argument(fmt::format("[{}] {} must be a 1-D int64 tensor", who, name));
  if (t.masked_positions.numel() != t.masked_labels.numel())
    throw std::invalid_argument(
        fmt::format("[{}] {} masked positions but {} labels", who, t.masked_positions.numel(), t.masked_labels.numel()));
  if (sentence_task != SentenceTask::None && t.sentence_labels.numel() != in.batch())
    throw std::invalid_argument(fmt::format("[{}] {} {} labels for a batch of {}", who, t.sentence_labels.numel(),
                                            sentence_task_name(sentence_task), in.batch()));
  const size_t n = in.batch() * in.seq_len();
  for (int64_t p : t.masked_positions.to_ints())
    if (p < 0 || size_t(p) >= n) throw std::out_of_range(fmt::format("[{}] masked position {} outside the {} tokens", who, p, n));
}

PretrainingRows pretraining_rows(const ModelInputs& in, const PretrainingTargets& t) {
  const size_t B = in.batch(), T = in.seq_len();
  const std::vector<int64_t> positions = t.masked_positions.to_ints();  // checked: in [0, B * T)
  std::vector<std::vector<int64_t>> per_sequence(B);
  for (size_t b = 0; b < B; ++b) per_sequence[b].push_back(int64_t(b * T));
  std::vector<std::pair<size_t, size_t>> slot(positions.size());  // (sequence, index in it)
  for (size_t i = 0; i < positions.size(); ++i) {
    const size_t b = size_t(positions[i]) / T;
    slot[i] = {b, per_sequence[b].size()};
    per_sequence[b].push_back(positions[i]);
  }
  PretrainingRows r;
  for (const auto& s : per_sequence) r.rows.per_sequence = std::max(r.rows.per_sequence, s.size());
  for (size_t b = 0; b < B; ++b) {
    r.rows.rows.insert(r.rows.rows.end(), per_sequence[b].begin(), per_sequence[b].end());
    r.rows.rows.insert(r.rows.rows.end(), r.rows.per_sequence - per_sequence[b].size(), int64_t(b * T));
  }
  for (const auto& [b, i] : slot) r.masked.push_back(int64_t(b * r.rows.per_sequence + i));
  return r;
}

void masked_lm_loss(const Tensor& hidden, const std::vector<int64_t>& masked_rows, const PretrainingTargets& t,
                    const std::function<Tensor(const Tensor&)>& head, PretrainingOutput& out) {
  const long n = long(hidden.size(0) * hidden.size(1)), m = long(masked_rows.size());
  const Tensor rows = index_select(reshape(hidden, {n, -1}), 0, masked_rows);
  out.mlm_logits = reshape(head(reshape(rows, {1, m, -1})), {m, -1});
  out.mlm_loss = cross_entropy(out.mlm_logits, t.masked_labels);
  out.mlm_correct = count_correct(out.mlm_logits, t.masked_labels);
  out.loss = out.mlm_loss;
}

void add_sentence_loss(const Tensor& logits, const PretrainingTargets& t, PretrainingOutput& out) {
  out.sentence_logits = logits;
  out.sentence_loss = cross_entropy(logits, t.sentence_labels);
  out.sentence_correct = count_correct(logits, t.sentence_labels);
  out.loss = add(out.mlm_loss, out.sentence_loss);
}

}  // namespace xg::models
