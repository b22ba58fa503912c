#include "training/tasks/ner_data.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "metrics/entity_metrics.hpp"
#include "util/atomic_file.hpp"

namespace xg::training {

size_t NerSet::words() const {
  size_t n = 0;
  for (const auto& s : sentences) n += s.words.size();
  return n;
}

NerSet encode_conll(const std::string& path, const text::ConllOptions& read, const text::Tokenizer& tokenizer,
                    const std::vector<std::string>& id2label, const text::WordAlignOptions& align) {
  text::ConllData data = text::read_conll(path, read);
  NerSet set;
  set.path = path;
  set.scheme = data.scheme;
  const std::vector<int64_t> continuation = text::continuation_labels(id2label);
  for (size_t s = 0; s < data.sentences.size(); ++s) {
    const text::ConllSentence& sentence = data.sentences[s];
    std::vector<std::string> iob2 = text::to_iob2(sentence.tags, data.scheme);
    std::vector<int64_t> ids;
    for (size_t w = 0; w < iob2.size() && !id2label.empty(); ++w) {
      const auto it = std::find(id2label.begin(), id2label.end(), iob2[w]);
      if (it == id2label.end())
        throw std::invalid_argument(fmt::format("[conll] {}:{}: tag '{}' (as IOB2 '{}') is not among the model's labels ({})", path,
                                                sentence.line + w, sentence.tags[w], iob2[w], fmt::join(id2label, ", ")));
      ids.push_back(int64_t(it - id2label.begin()));
    }
    // Byte-level BPE gives the first word its space mark too, as transformers' run_ner tokenizes
    // words for these models (add_prefix_space=True): a word is the same tokens anywhere.
    std::string joined;
    for (const auto& w : sentence.words) joined += (joined.empty() ? "" : " ") + w;
    const auto tokens = text::tokenize_as_words(tokenizer, joined, fmt::format("{}:{}", path, sentence.line));
    std::vector<size_t> mine;
    for (auto& win : text::align_words(tokenizer, tokens, text::joined_word_spans(sentence.words), ids, continuation, s, align)) {
      mine.push_back(set.windows.size());
      set.windows.push_back(std::move(win));
    }
    set.windows_of.push_back(std::move(mine));
    set.iob2_tags.push_back(std::move(iob2));
  }
  set.sentences = std::move(data.sentences);
  return set;
}

NerBatch make_ner_batch(const std::vector<text::TokenWindow>& windows, const std::vector<size_t>& rows, int64_t pad_id) {
  NerBatch b;
  b.inputs = inference::window_inputs(windows, rows, pad_id);
  const size_t longest = b.inputs.seq_len();
  std::vector<int64_t> labels(rows.size() * longest, text::kIgnoreLabel);
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& w = windows[rows[i]];
    std::copy(w.labels.begin(), w.labels.end(), labels.begin() + long(i * longest));
    b.tokens += w.ids.size();
  }
  b.labels = Tensor::from_ints(labels, {rows.size(), longest});
  return b;
}

NerPredictions predict_set(const NerSet& set, const std::vector<std::string>& id2label, int64_t pad_id, size_t batch_size,
                           const inference::LogitsFn& forward) {
  const auto logits = inference::window_logits(set.windows, pad_id, batch_size, forward);
  NerPredictions p;
  for (size_t s = 0; s < set.sentences.size(); ++s)
    p.tags.push_back(inference::predict_words(set.windows, set.windows_of[s], logits, id2label, set.sentences[s].words.size()).tags);
  p.report = metrics::entity_report(set.iob2_tags, p.tags);
  return p;
}

void write_conll_predictions(const std::string& path, const NerSet& set, const std::vector<std::vector<std::string>>& predicted_iob2) {
  std::string out;
  for (size_t s = 0; s < set.sentences.size(); ++s) {
    const auto predicted = text::from_iob2(predicted_iob2[s], set.scheme);
    for (size_t w = 0; w < predicted.size(); ++w)
      out += fmt::format("{} {} {}\n", set.sentences[s].words[w], set.sentences[s].tags[w], predicted[w]);
    out += "\n";
  }
  write_text_atomically(path, out);
}

}  // namespace xg::training
