#pragma once
// Answers from a QA model's span logits, as transformers' postprocess_qa_predictions
// (examples/pytorch/question-answering/utils_qa.py) decodes them: per window, the n_best_size
// highest start and end logits; spans inside the context, start <= end, at most
// max_answer_length tokens; the best span over all windows of a question. SQuAD v2.0: the null
// answer's score (the lowest start_logits[0] + end_logits[0] over the windows) against the best
// span's, answering "" when null_score - best span > null_score_diff_threshold.
#include <cstddef>
#include <string>
#include <vector>

#include "text/squad_data.hpp"

namespace xg::text {

struct SquadDecodeOptions {
  size_t n_best_size = 20;
  size_t max_answer_length = 30;   // tokens
  bool version_2 = false;          // questions may have no answer
  double null_score_diff_threshold = 0.0;
};

// A window's logits, one per token of its encoding (longer rows are fine: the rest is ignored).
struct SpanLogits {
  std::vector<float> start, end;
};

struct SquadPrediction {
  std::string text;             // the answer; "" for no answer (v2.0)
  size_t start = 0, end = 0;    // code points [start, end) in the context; 0, 0 for no answer
  double score = 0;             // start + end logit of the best span (of the null answer when "")
  double probability = 0;       // softmax of that score over the n-best list
  // v2.0: null score minus the best span's score (the official script's na_prob / null_odds).
  double null_odds = 0;
};

// One prediction per question, in question order. `logits[i]` belongs to `features[i]`; a
// question with no feature throws. As transformers does, a question whose n-best list has no
// span gets the text "empty".
std::vector<SquadPrediction> decode_squad_answers(const std::vector<SquadQuestion>& questions,
                                                  const std::vector<SquadFeature>& features,
                                                  const std::vector<SpanLogits>& logits, const SquadDecodeOptions& options);

}  // namespace xg::text
