#include "text/squad_predictions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "text/unicode.hpp"

namespace xg::text {

namespace {

struct Candidate {
  size_t start_char = 0, end_char = 0;
  float score = 0, start_logit = 0, end_logit = 0;  // float32 sums, as numpy adds them
  bool null = false;
  std::string text;
  double probability = 0;
};

// Positions of the n largest values of row[0, n_tokens), largest first (numpy's
// argsort(row)[-1:-n-1:-1]; ties, which real logits do not have, go to the later position).
std::vector<size_t> top_indices(const std::vector<float>& row, size_t n_tokens, size_t n) {
  std::vector<size_t> order(std::min(n_tokens, row.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return row[a] > row[b] || (row[a] == row[b] && a > b); });
  if (order.size() > n) order.resize(n);
  return order;
}

// Every span of one window that may be an answer, plus the window's null answer.
void window_candidates(const SquadFeature& f, const SpanLogits& l, const SquadDecodeOptions& o, std::vector<Candidate>& spans,
                       std::optional<Candidate>& min_null) {
  if (l.start.empty() || l.end.empty()) throw std::invalid_argument("[squad] a window has no logits");
  const Candidate null{0, 0, l.start[0] + l.end[0], l.start[0], l.end[0], true, "", 0};
  if (!min_null || min_null->score > null.score) min_null = null;  // transformers keeps the lowest
  const auto& off = f.encoding.offsets;
  for (size_t s : top_indices(l.start, f.encoding.size(), o.n_best_size))
    for (size_t e : top_indices(l.end, f.encoding.size(), o.n_best_size)) {
      const bool in_context = s >= f.context_begin && s < f.context_end && e >= f.context_begin && e < f.context_end;
      if (!in_context || e < s || e - s + 1 > o.max_answer_length) continue;
      spans.push_back({off[s].first, off[e].second, l.start[s] + l.end[e], l.start[s], l.end[e], false, "", 0});
    }
}

// The question's n-best list, best first, with texts and probabilities (utils_qa.py's steps).
std::vector<Candidate> n_best(std::vector<Candidate> spans, const std::optional<Candidate>& min_null, const std::vector<char32_t>& context,
                              const SquadDecodeOptions& o) {
  if (o.version_2 && min_null) spans.push_back(*min_null);
  std::stable_sort(spans.begin(), spans.end(), [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  if (spans.size() > o.n_best_size) spans.resize(o.n_best_size);
  if (o.version_2 && min_null && std::none_of(spans.begin(), spans.end(), [](const Candidate& c) { return c.null; }))
    spans.push_back(*min_null);
  for (auto& c : spans)
    c.text = encode_utf8(std::u32string(context.begin() + long(c.start_char), context.begin() + long(c.end_char)));
  if (spans.empty() || (spans.size() == 1 && spans[0].text.empty())) {
    Candidate placeholder;  // transformers' stand-in when nothing is left
    placeholder.text = "empty";
    spans.insert(spans.begin(), placeholder);
  }
  float top = spans[0].score;
  for (const auto& c : spans) top = std::max(top, c.score);
  double sum = 0;
  for (auto& c : spans) sum += c.probability = std::exp(double(c.score) - double(top));
  for (auto& c : spans) c.probability /= sum;
  return spans;
}

SquadPrediction prediction_of(const Candidate& c) { return {c.text, c.start_char, c.end_char, double(c.score), c.probability, 0}; }

}  // namespace

std::vector<SquadPrediction> decode_squad_answers(const std::vector<SquadQuestion>& questions, const std::vector<SquadFeature>& features,
                                                  const std::vector<SpanLogits>& logits, const SquadDecodeOptions& o) {
  if (logits.size() != features.size())
    throw std::invalid_argument(fmt::format("[squad] {} windows but logits for {}", features.size(), logits.size()));
  std::vector<std::vector<size_t>> windows_of(questions.size());
  for (size_t i = 0; i < features.size(); ++i) {
    if (features[i].question >= questions.size())
      throw std::invalid_argument(fmt::format("[squad] window {} belongs to question {} of {}", i, features[i].question, questions.size()));
    windows_of[features[i].question].push_back(i);
  }
  std::vector<SquadPrediction> out;
  for (size_t q = 0; q < questions.size(); ++q) {
    if (windows_of[q].empty()) throw std::invalid_argument(fmt::format("[squad] question '{}' has no window", questions[q].id));
    std::vector<Candidate> spans;
    std::optional<Candidate> min_null;
    for (size_t i : windows_of[q]) window_candidates(features[i], logits[i], o, spans, min_null);
    const std::vector<char32_t> context = decode_utf8(*questions[q].context, InvalidUtf8::Replace);
    const std::vector<Candidate> best = n_best(std::move(spans), min_null, context, o);
    if (!o.version_2) {
      out.push_back(prediction_of(best[0]));
      continue;
    }
    // The best non-empty answer, as utils_qa picks it. Where every span's text is empty (spans over
    // whitespace-only tokens), utils_qa runs off its list: the best span that is not the null.
    auto answer = std::find_if(best.begin(), best.end(), [](const Candidate& c) { return !c.text.empty(); });
    if (answer == best.end()) answer = std::find_if(best.begin(), best.end(), [](const Candidate& c) { return !c.null; });
    const float null_odds = min_null->score - answer->start_logit - answer->end_logit;
    const auto null_entry = std::find_if(best.begin(), best.end(), [](const Candidate& c) { return c.null; });
    SquadPrediction p = null_odds > o.null_score_diff_threshold ? prediction_of(*null_entry) : prediction_of(*answer);
    p.null_odds = double(null_odds);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace xg::text
