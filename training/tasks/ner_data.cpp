#include "training/tasks/ner_data.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "text/roberta_tokenizer.hpp"
#include "text/unicode.hpp"
#include "training/entity_metrics.hpp"
#include "util/atomic_file.hpp"

namespace xg::training {

namespace {
// Byte-level BPE (RoBERTa) marks a word's leading space in its tokens.
bool byte_level(const text::Tokenizer& tokenizer) { return dynamic_cast<const text::RobertaTokenizer*>(&tokenizer) != nullptr; }

// Raw text tokenized as encode_conll tokenizes its words: with byte-level BPE the first word gets
// its space mark too (unless the text starts with a space); offsets stay the text's own.
std::vector<text::Token> tokenize_as_words(const text::Tokenizer& tokenizer, const std::string& text, const std::string& where) {
  if (!byte_level(tokenizer) || text.empty() || text[0] == ' ') return tokenizer.tokenize(text, where);
  std::vector<text::Token> tokens = tokenizer.tokenize(" " + text, where);
  for (auto& t : tokens) t.start = t.start > 0 ? t.start - 1 : 0, t.end = t.end > 0 ? t.end - 1 : 0;
  return tokens;
}

// Raw text tokenized as encode_conll tokenizes a sentence's words: split at whitespace (Unicode
// White_Space, where BERT's and byte-level BPE's pre-tokenizers split), joined by single spaces,
// offsets mapped back to the text's code points. Byte-level BPE would otherwise make a tab or a
// run of spaces tokens of their own: words training never saw.
std::vector<text::Token> tokenize_text_as_words(const text::Tokenizer& tokenizer, const std::string& raw,
                                                const std::string& where) {
  const std::vector<char32_t> cps = text::decode_utf8(raw, text::InvalidUtf8::Error, where);
  std::u32string joined;
  std::vector<size_t> origin;  // per code point of `joined`, its index in `raw`
  for (size_t i = 0; i < cps.size();) {
    if (text::is_whitespace(cps[i])) {
      ++i;
      continue;
    }
    if (!joined.empty()) joined += U' ', origin.push_back(i);  // the space stands at the word's start
    for (; i < cps.size() && !text::is_whitespace(cps[i]); ++i) joined += cps[i], origin.push_back(i);
  }
  std::vector<text::Token> tokens = tokenize_as_words(tokenizer, text::encode_utf8(joined), where);
  const auto text_index = [&](size_t j) { return j < origin.size() ? origin[j] : cps.size(); };
  for (auto& t : tokens) {
    const size_t start = text_index(t.start);
    t.end = t.end > t.start ? origin[t.end - 1] + 1 : start;
    t.start = start;
  }
  return tokens;
}
}  // namespace

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
    const auto tokens = tokenize_as_words(tokenizer, joined, fmt::format("{}:{}", path, sentence.line));
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
  std::vector<models::Sequence> seqs;
  size_t longest = 0;
  NerBatch b;
  for (size_t r : rows) {
    const auto& w = windows[r];
    seqs.push_back({std::vector<int64_t>(w.ids.begin(), w.ids.end()), std::vector<int64_t>(w.ids.size(), 0)});
    longest = std::max(longest, w.ids.size());
    b.tokens += w.ids.size();
  }
  std::vector<int64_t> labels(rows.size() * longest, text::kIgnoreLabel);
  for (size_t i = 0; i < rows.size(); ++i) std::copy(windows[rows[i]].labels.begin(), windows[rows[i]].labels.end(), labels.begin() + long(i * longest));
  b.inputs = models::pad_sequences(seqs, pad_id);
  b.labels = Tensor::from_ints(labels, {rows.size(), longest});
  return b;
}

std::vector<std::vector<float>> window_logits(const std::vector<text::TokenWindow>& windows, int64_t pad_id, size_t batch_size,
                                              const LogitsFn& forward) {
  std::vector<std::vector<float>> out;
  for (size_t start = 0; start < windows.size(); start += batch_size) {
    std::vector<size_t> rows;
    for (size_t r = start; r < std::min(windows.size(), start + batch_size); ++r) rows.push_back(r);
    const NerBatch b = make_ner_batch(windows, rows, pad_id);
    const Tensor logits = forward(b.inputs);
    const size_t T = b.inputs.seq_len(), C = logits.size(2);
    const std::vector<float> all = logits.to_vector();
    for (size_t i = 0; i < rows.size(); ++i) {
      const size_t n = windows[rows[i]].ids.size();  // drop the padding's rows
      out.emplace_back(all.begin() + long(i * T * C), all.begin() + long((i * T + n) * C));
    }
  }
  return out;
}

WordTags predict_words(const std::vector<text::TokenWindow>& windows, const std::vector<size_t>& window_ids,
                       const std::vector<std::vector<float>>& logits, const std::vector<std::string>& id2label, size_t n_words) {
  const size_t C = id2label.size();
  WordTags out;
  for (const text::WordSource& src : text::word_sources(windows, window_ids, n_words)) {
    if (src.window == size_t(-1)) {
      out.tags.push_back("O");
      out.scores.push_back(1.0f);
      continue;
    }
    const float* row = logits[src.window].data() + src.position * C;
    const size_t best = size_t(std::max_element(row, row + C) - row);
    double sum = 0;
    for (size_t c = 0; c < C; ++c) sum += std::exp(double(row[c]) - double(row[best]));
    out.tags.push_back(id2label[best]);
    out.scores.push_back(float(1.0 / sum));
  }
  return out;
}

NerPredictions predict_set(const NerSet& set, const std::vector<std::string>& id2label, int64_t pad_id, size_t batch_size,
                           const LogitsFn& forward) {
  const auto logits = window_logits(set.windows, pad_id, batch_size, forward);
  NerPredictions p;
  for (size_t s = 0; s < set.sentences.size(); ++s)
    p.tags.push_back(predict_words(set.windows, set.windows_of[s], logits, id2label, set.sentences[s].words.size()).tags);
  p.report = metrics::entity_report(set.iob2_tags, p.tags);
  return p;
}

std::vector<FoundEntity> found_entities(const std::string& text, const std::vector<std::pair<size_t, size_t>>& word_spans,
                                        const WordTags& words) {
  const std::vector<char32_t> cps = text::decode_utf8(text, text::InvalidUtf8::Replace);
  std::vector<FoundEntity> out;
  for (const metrics::Entity& e : metrics::extract_entities({words.tags})) {
    FoundEntity f;
    f.type = e.type;
    f.start = word_spans[e.start].first;
    f.end = word_spans[e.end - 1].second;
    f.text = text::encode_utf8(std::u32string(cps.begin() + long(f.start), cps.begin() + long(f.end)));
    for (size_t w = e.start; w < e.end; ++w) f.score += words.scores[w];
    f.score /= double(e.end - e.start);
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<std::vector<FoundEntity>> tag_texts(const std::vector<std::string>& texts, const text::Tokenizer& tokenizer,
                                                const std::vector<std::string>& id2label, const text::WordAlignOptions& align,
                                                size_t batch_size, const LogitsFn& forward,
                                                const std::function<std::string(size_t)>& where) {
  std::vector<text::TokenWindow> windows;
  std::vector<std::vector<size_t>> windows_of;
  std::vector<std::vector<std::pair<size_t, size_t>>> spans;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto tokens = tokenize_text_as_words(tokenizer, texts[i], where(i));
    spans.push_back(text::token_word_spans(tokenizer, tokens));
    std::vector<size_t> mine;
    for (auto& w : text::align_words(tokenizer, tokens, spans.back(), {}, {}, i, align)) {
      mine.push_back(windows.size());
      windows.push_back(std::move(w));
    }
    windows_of.push_back(std::move(mine));
  }
  const auto logits = window_logits(windows, tokenizer.pad_id(), batch_size, forward);
  std::vector<std::vector<FoundEntity>> out;
  for (size_t i = 0; i < texts.size(); ++i)
    out.push_back(found_entities(texts[i], spans[i], predict_words(windows, windows_of[i], logits, id2label, spans[i].size())));
  return out;
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
