#pragma once
// Named-entity data as the NER task uses it: CoNLL sentences turned into model windows
// (text/conll_data.hpp), batches of windows with their labels, a set's predictions scored as
// seqeval scores them (the tagging itself is inference/ner_tagging.hpp's), and a predictions file.
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"
#include "inference/ner_tagging.hpp"
#include "metrics/entity_metrics.hpp"
#include "models/core/model_inputs.hpp"
#include "text/conll_data.hpp"
#include "text/tokenizer.hpp"

namespace xg::training {

// A CoNLL file encoded for a model with the labels `id2label` (IOB2).
struct NerSet {
  std::string path;
  text::TagScheme scheme = text::TagScheme::IOB2;   // the file's, for writing predictions back
  std::vector<text::ConllSentence> sentences;       // as read
  std::vector<std::vector<std::string>> iob2_tags;  // per sentence, canonical
  std::vector<text::TokenWindow> windows;           // all sentences' windows, in order
  std::vector<std::vector<size_t>> windows_of;      // per sentence, its windows' indices
  size_t words() const;
};

// Reads and encodes `path`, its windows labelled with `id2label` for training: a tag not among
// them throws naming the file, line and tag. With `id2label` empty the windows carry no labels (a
// set to score, whose tags are compared as text: a type the model never saw is simply missed).
NerSet encode_conll(const std::string& path, const text::ConllOptions& read, const text::Tokenizer& tokenizer,
                    const std::vector<std::string>& id2label, const text::WordAlignOptions& align);

// The windows `rows` of a set, padded to the longest; labels (B, T) with kIgnoreLabel on padding.
struct NerBatch {
  models::ModelInputs inputs;
  Tensor labels;
  size_t tokens = 0;
};
NerBatch make_ner_batch(const std::vector<text::TokenWindow>& windows, const std::vector<size_t>& rows, int64_t pad_id);

// A set's predicted IOB2 tags per sentence and seqeval's report of them against its tags.
struct NerPredictions {
  std::vector<std::vector<std::string>> tags;
  metrics::EntityReport report;
};
NerPredictions predict_set(const NerSet& set, const std::vector<std::string>& id2label, int64_t pad_id, size_t batch_size,
                           const inference::LogitsFn& forward);

// Writes "word gold predicted" lines, a blank line after each sentence, tags in the file's scheme
// (predictions converted back from IOB2); atomically.
void write_conll_predictions(const std::string& path, const NerSet& set, const std::vector<std::vector<std::string>>& predicted_iob2);

}  // namespace xg::training
