#pragma once
// The official SQuAD evaluation scripts (evaluate-v1.1.py and evaluate-v2.0.py), checked against
// them on goldens (tools/gen_squad_goldens.py). Answers are compared after normalisation: lower
// case, ASCII punctuation removed, the articles a/an/the removed as words, whitespace collapsed.
#include <map>
#include <string>
#include <vector>

#include "metrics/scalars.hpp"

namespace xg::metrics::squad {

// The official normalize_answer (Python's str.lower, string.punctuation, \b(a|an|the)\b with
// Unicode word characters, str.split).
std::string normalize_answer(const std::string& s);

// Whether the normalised texts are equal (both scripts).
bool exact_match(const std::string& prediction, const std::string& gold);
// v1.1's token F1: 0 when the normalised texts share no token (so also when either is empty).
double f1_v1(const std::string& prediction, const std::string& gold);
// v2.0's token F1: as v1.1, except that an empty side scores 1 when the other is empty too.
double f1_v2(const std::string& prediction, const std::string& gold);

// A question's gold answers as the data file lists them (empty: unanswerable, v2.0).
struct GoldAnswers {
  std::string id;
  std::vector<std::string> answers;
};
using Predictions = std::map<std::string, std::string>;  // id -> answer text

// evaluate-v1.1.py: {"exact_match", "f1"} in percent, each the maximum over a question's gold
// answers, averaged over all questions; a question without a prediction scores 0 (the script warns).
// Throws when there are no questions or a question has no gold answer.
Scalars evaluate_v1(const std::vector<GoldAnswers>& gold, const Predictions& predictions);

// evaluate-v2.0.py: "exact", "f1", "total", the same for "HasAns_" and "NoAns_" questions (when
// there are some), and "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh" (the scores
// with the best threshold on the no-answer probabilities). `na_probs` (id -> no-answer
// probability or null odds; absent ids 0, as without --na-prob-file) above `na_prob_thresh` turn a
// prediction into "no answer". Every question needs a prediction (the script fails otherwise).
Scalars evaluate_v2(const std::vector<GoldAnswers>& gold, const Predictions& predictions,
                    const std::map<std::string, double>& na_probs = {}, double na_prob_thresh = 1.0);

}  // namespace xg::metrics::squad
