#pragma once
// Tagging with a token-classification model (*ForTokenClassification of any family): windows of
// sub-tokens run through the model, the way back from its per-position logits to a tag and a score
// per word, and to entities with character spans in raw text.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.hpp"
#include "models/core/model_inputs.hpp"
#include "text/conll_data.hpp"
#include "text/tokenizer.hpp"

namespace xg::inference {

// The windows `rows` of `windows` as model inputs, padded to the longest, one token type.
models::ModelInputs window_inputs(const std::vector<text::TokenWindow>& windows, const std::vector<size_t>& rows, int64_t pad_id);

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

}  // namespace xg::inference
