#include "inference/ner_tagging.hpp"

#include <algorithm>
#include <cmath>

#include "metrics/entity_metrics.hpp"
#include "text/unicode.hpp"

namespace xg::inference {

models::ModelInputs window_inputs(const std::vector<text::TokenWindow>& windows, const std::vector<size_t>& rows, int64_t pad_id) {
  std::vector<models::Sequence> seqs;
  for (size_t r : rows) {
    const auto& ids = windows[r].ids;
    seqs.push_back({std::vector<int64_t>(ids.begin(), ids.end()), std::vector<int64_t>(ids.size(), 0)});
  }
  return models::pad_sequences(seqs, pad_id);
}

std::vector<std::vector<float>> window_logits(const std::vector<text::TokenWindow>& windows, int64_t pad_id, size_t batch_size,
                                              const LogitsFn& forward) {
  std::vector<std::vector<float>> out;
  for (size_t start = 0; start < windows.size(); start += batch_size) {
    std::vector<size_t> rows;
    for (size_t r = start; r < std::min(windows.size(), start + batch_size); ++r) rows.push_back(r);
    const models::ModelInputs inputs = window_inputs(windows, rows, pad_id);
    const Tensor logits = forward(inputs);
    const size_t T = inputs.seq_len(), C = logits.size(2);
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
    const auto tokens = text::tokenize_text_as_words(tokenizer, texts[i], where(i));
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

}  // namespace xg::inference
