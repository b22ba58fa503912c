#pragma once
// A question-answering model (*ForQuestionAnswering of any family) run over SQuAD features:
// the span logits of every window, which text/squad_predictions.hpp decodes into answers.
#include <cstdint>
#include <vector>

#include "models/core/pretrained.hpp"
#include "text/squad_data.hpp"
#include "text/squad_predictions.hpp"

namespace xg::inference {

// The model's token ids and token types of a feature.
models::Sequence feature_sequence(const text::SquadFeature& feature);

// Start and end logits of every feature, `batch` windows per forward pass (each batch padded to
// its longest window). The caller turns gradients off and the model to eval().
std::vector<text::SpanLogits> span_logits(models::PretrainedModel& model, const std::vector<text::SquadFeature>& features,
                                          int64_t pad_id, size_t batch);

}  // namespace xg::inference
