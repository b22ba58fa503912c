#pragma once
// Named-entity data as the NER task uses it: CoNLL sentences turned into model windows
// (text/conll_data.hpp), batches of windows with their labels, and the way back from the model's
// per-position logits to a tag and a score per word, to entities with character spans in raw text,
// and to a predictions file.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"
#include "models/core/model_inputs.hpp"
#include "text/conll_data.hpp"
#include "text/tokenizer.hpp"
#include "training/entity_metrics.hpp"

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

// Logits of every window of `windows`, computed `batch_size` windows at a time by `forward`
// (a (B, T, num_labels) logits tensor for a batch); one row-major T x num_labels block per window.
using LogitsFn = std::function<Tensor(const models::ModelInputs&)>;
std::vector<std::vector<float>> window_logits(const std::vector<text::TokenWindow>& windows, int64_t pad_id, size_t batch_size,
                                              const LogitsFn& forward);

// Per word: the arg-max label of its first sub-token (in the window text::word_sources picks) and
// that label's softmax probability; "O" with score 1 for a word with no sub-token.
struct WordTags {
  std::vector<std::string> tags;
  std::vector<float> scores;
};
WordTags predict_words(const std::vector<text::TokenWindow>& windows, const std::vector<size_t>& window_ids,
                       const std::vector<std::vector<float>>& logits, const std::vector<std::string>& id2label, size_t n_words);

// A set's predicted IOB2 tags per sentence and seqeval's report of them against its tags.
struct NerPredictions {
  std::vector<std::vector<std::string>> tags;
  metrics::EntityReport report;
};
NerPredictions predict_set(const NerSet& set, const std::vector<std::string>& id2label, int64_t pad_id, size_t batch_size,
                           const LogitsFn& forward);

// An entity found in raw text: its type, text, code-point span [start, end) in that text, and the
// mean probability of its words' tags.
struct FoundEntity {
  std::string type, text;
  size_t start = 0, end = 0;
  double score = 0;
};
// Entities of predicted IOB2 word tags (read as seqeval's default mode reads them) over words with
// code-point spans in `text`.
std::vector<FoundEntity> found_entities(const std::string& text, const std::vector<std::pair<size_t, size_t>>& word_spans,
                                        const WordTags& words);

// The entities in each of `texts` (raw text: words as the tokenizer sees them, token_word_spans),
// windows of `align` run `batch_size` at a time through `forward`. `where(i)` names text i in
// errors (invalid UTF-8).
std::vector<std::vector<FoundEntity>> tag_texts(const std::vector<std::string>& texts, const text::Tokenizer& tokenizer,
                                                const std::vector<std::string>& id2label, const text::WordAlignOptions& align,
                                                size_t batch_size, const LogitsFn& forward,
                                                const std::function<std::string(size_t)>& where);

// Writes "word gold predicted" lines, a blank line after each sentence, tags in the file's scheme
// (predictions converted back from IOB2); atomically.
void write_conll_predictions(const std::string& path, const NerSet& set, const std::vector<std::vector<std::string>>& predicted_iob2);

}  // namespace xg::training
