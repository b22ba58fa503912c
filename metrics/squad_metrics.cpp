#include "metrics/squad_metrics.hpp"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "text/unicode.hpp"

namespace xg::metrics::squad {

namespace {

// Python's re \w on str: letters, numbers (Nd, Nl, No) and '_'.
bool word_char(char32_t c) {
  if (c == U'_') return true;
  switch (utf8proc_category(utf8proc_int32_t(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

bool cased_letter(char32_t c) {
  const auto cat = utf8proc_category(utf8proc_int32_t(c));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

// Python's str.lower: full lower-case mapping, with Greek capital sigma becoming final sigma at
// the end of a word (after a cased letter, not before one).
std::u32string python_lower(const std::vector<char32_t>& s) {
  std::u32string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == U'\u03A3' && i > 0 && cased_letter(s[i - 1]) && (i + 1 == s.size() || !cased_letter(s[i + 1]))) {
      out += U'\u03C2';
      continue;
    }
    text::to_lower(s[i], out);
  }
  return out;
}

bool ascii_punctuation(char32_t c) { return c < 128 && std::string_view("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~").find(char(c)) != std::string_view::npos; }

// re.sub(r'\b(a|an|the)\b', ' ', s): the alternatives are tried in order, so "an" is found where
// "a" is not followed by a boundary.
std::u32string remove_articles(const std::u32string& s) {
  std::u32string out;
  auto boundary = [&](size_t i) { return (i > 0 && word_char(s[i - 1])) != (i < s.size() && word_char(s[i])); };
  for (size_t i = 0; i < s.size();) {
    size_t matched = 0;
    if (boundary(i))
      for (std::u32string_view article : {U"a", U"an", U"the"})
        if (s.compare(i, article.size(), article) == 0 && boundary(i + article.size())) {
          matched = article.size();
          break;
        }
    if (matched) {
      out += U' ';
      i += matched;
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::vector<std::string> tokens_of(const std::string& normalised) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t space; (space = normalised.find(' ', start)) != std::string::npos; start = space + 1) out.push_back(normalised.substr(start, space - start));
  if (!normalised.empty()) out.push_back(normalised.substr(start));
  return out;
}

// Tokens the two share, counted as Counter(a) & Counter(b) counts them.
double shared_tokens(std::vector<std::string> a, std::vector<std::string> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<std::string> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  return double(common.size());
}

double token_f1(const std::vector<std::string>& pred, const std::vector<std::string>& gold) {
  const double same = shared_tokens(pred, gold);
  if (same == 0) return 0;
  const double precision = same / double(pred.size()), recall = same / double(gold.size());
  return 2 * precision * recall / (precision + recall);
}

template <class Metric>
double best_over(const std::vector<std::string>& golds, const std::string& prediction, Metric metric) {
  double best = 0;
  for (const auto& g : golds) best = std::max(best, metric(prediction, g));
  return best;
}

}  // namespace

std::string normalize_answer(const std::string& s) {
  std::u32string lowered = python_lower(text::decode_utf8(s, text::InvalidUtf8::Replace));
  lowered.erase(std::remove_if(lowered.begin(), lowered.end(), ascii_punctuation), lowered.end());
  const std::u32string words = remove_articles(lowered);
  std::u32string out;  // ' '.join(s.split())
  for (size_t i = 0; i < words.size();) {
    while (i < words.size() && text::is_python_space(words[i])) ++i;
    if (i == words.size()) break;
    if (!out.empty()) out += U' ';
    while (i < words.size() && !text::is_python_space(words[i])) out += words[i++];
  }
  return text::encode_utf8(out);
}

bool exact_match(const std::string& prediction, const std::string& gold) { return normalize_answer(prediction) == normalize_answer(gold); }

double f1_v1(const std::string& prediction, const std::string& gold) {
  return token_f1(tokens_of(normalize_answer(prediction)), tokens_of(normalize_answer(gold)));
}

double f1_v2(const std::string& prediction, const std::string& gold) {
  const auto pred = tokens_of(normalize_answer(prediction)), truth = tokens_of(normalize_answer(gold));
  if (pred.empty() || truth.empty()) return pred == truth ? 1.0 : 0.0;
  return token_f1(pred, truth);
}

Scalars evaluate_v1(const std::vector<GoldAnswers>& gold, const Predictions& predictions) {
  if (gold.empty()) throw std::invalid_argument("[squad v1.1] no questions to score");
  double em = 0, f1 = 0;
  for (const auto& q : gold) {
    if (q.answers.empty()) throw std::invalid_argument(fmt::format("[squad v1.1] question '{}' has no gold answer", q.id));
    const auto it = predictions.find(q.id);
    if (it == predictions.end()) continue;  // the script: "will receive score 0"
    em += best_over(q.answers, it->second, [](const std::string& p, const std::string& g) { return double(exact_match(p, g)); });
    f1 += best_over(q.answers, it->second, f1_v1);
  }
  const double n = double(gold.size());
  return {{"exact_match", 100.0 * em / n}, {"f1", 100.0 * f1 / n}};
}

namespace {

struct RawScores {
  std::vector<double> exact, f1;  // per question, in gold order
};

// get_raw_scores: gold answers that normalise to nothing are dropped; none left: the only right
// answer is "".
RawScores raw_scores(const std::vector<GoldAnswers>& gold, const Predictions& predictions) {
  RawScores r;
  for (const auto& q : gold) {
    std::vector<std::string> answers;
    for (const auto& a : q.answers)
      if (!normalize_answer(a).empty()) answers.push_back(a);
    if (answers.empty()) answers.push_back("");
    const auto it = predictions.find(q.id);
    if (it == predictions.end()) throw std::invalid_argument(fmt::format("[squad v2.0] no prediction for question '{}'", q.id));
    r.exact.push_back(best_over(answers, it->second, [](const std::string& p, const std::string& g) { return double(exact_match(p, g)); }));
    r.f1.push_back(best_over(answers, it->second, f1_v2));
  }
  return r;
}

// find_best_thresh: walks the questions by rising no-answer probability, as if each threshold in
// turn let that question be answered.
std::pair<double, double> best_threshold(const std::vector<GoldAnswers>& gold, const Predictions& predictions,
                                         const std::vector<double>& scores, const std::vector<double>& na) {
  double current = 0;
  for (const auto& q : gold) current += q.answers.empty();
  double best = current, thresh = 0.0;
  std::vector<size_t> order(gold.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return na[a] < na[b]; });
  for (size_t i : order) {
    if (!gold[i].answers.empty()) current += scores[i];
    else current -= predictions.at(gold[i].id).empty() ? 0.0 : 1.0;
    if (current > best) {
      best = current;
      thresh = na[i];
    }
  }
  return {100.0 * best / double(gold.size()), thresh};
}

}  // namespace

Scalars evaluate_v2(const std::vector<GoldAnswers>& gold, const Predictions& predictions, const std::map<std::string, double>& na_probs,
                    double na_prob_thresh) {
  if (gold.empty()) throw std::invalid_argument("[squad v2.0] no questions to score");
  const RawScores raw = raw_scores(gold, predictions);
  std::vector<double> na;
  for (const auto& q : gold) na.push_back(na_probs.count(q.id) ? na_probs.at(q.id) : 0.0);
  Scalars out;
  // apply_no_ans_threshold and make_eval_dict over all, answerable and unanswerable questions
  auto add = [&](const std::string& prefix, bool has_answer, bool all) {
    double exact = 0, f1 = 0, total = 0;
    for (size_t i = 0; i < gold.size(); ++i) {
      if (!all && gold[i].answers.empty() == has_answer) continue;
      const bool predicted_none = na[i] > na_prob_thresh;
      const double no_answer_score = gold[i].answers.empty() ? 1.0 : 0.0;
      exact += predicted_none ? no_answer_score : raw.exact[i];
      f1 += predicted_none ? no_answer_score : raw.f1[i];
      total += 1;
    }
    if (total == 0) return;
    out.insert(out.end(), {{prefix + "exact", 100.0 * exact / total}, {prefix + "f1", 100.0 * f1 / total}, {prefix + "total", total}});
  };
  add("", true, true);
  add("HasAns_", true, false);
  add("NoAns_", false, false);
  const auto [best_exact, exact_thresh] = best_threshold(gold, predictions, raw.exact, na);
  const auto [best_f1, f1_thresh] = best_threshold(gold, predictions, raw.f1, na);
  out.insert(out.end(), {{"best_exact", best_exact}, {"best_exact_thresh", exact_thresh}, {"best_f1", best_f1}, {"best_f1_thresh", f1_thresh}});
  return out;
}

}  // namespace xg::metrics::squad
