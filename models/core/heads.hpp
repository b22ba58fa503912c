#pragma once
// What the task heads of every family share: their losses with transformers' semantics and the
// small modules they are made of. A family's head classes (models/bert/bert_heads.hpp, ...) put these
// over its encoder under its own names.
#include <memory>

#include "models/core/head_config.hpp"
#include "models/core/pretrained.hpp"
#include "nn/nn.hpp"

namespace xg::models {

// transformers' *ForSequenceClassification loss for (B, C) logits. The problem type is the
// config's, or, when unset, regression for one label, single-label for int64 labels, else
// multi-label. Regression: MSE against (B) labels (C == 1) or (B, C); single-label: cross-entropy
// against (B) ids, -100 ignored; multi-label: BCE with logits against (B, C) targets in [0, 1].
// Integer labels are converted to float for regression and multi-label. Throws on wrong shapes.
Tensor sequence_classification_loss(const Tensor& logits, const Tensor& labels, const HeadConfig& head);

// (B, T, 2) span logits -> start_logits and end_logits, each (B, T).
std::pair<Tensor, Tensor> split_span_logits(const Tensor& logits);

// transformers' *ForQuestionAnswering loss: positions (B) clamped to [0, T], T ignored (an answer
// outside the window), the mean of the start and end cross-entropies.
Tensor question_answering_loss(const Tensor& start_logits, const Tensor& end_logits, const Tensor& start_positions,
                               const Tensor& end_positions);

// Multiple choice: inputs of (B, C, T) tensors as rows of B * C sequences, and C.
std::pair<ModelInputs, size_t> flatten_choices(const ModelInputs& in);
// (B * C, 1) scores -> "logits" (B, C) and, with "labels" ((B) ids of the right choice), "loss".
NamedOutputs multiple_choice_outputs(const Tensor& scores, size_t num_choices, const Labels& labels,
                                     const std::string& architecture);

// `head` when it has the 2 labels question answering predicts (start and end), else throws
// naming the architecture.
HeadConfig span_head(HeadConfig head, const char* architecture);

// dropout then a Linear to num_labels: the classifier of BERT's and ALBERT's sequence and token
// heads (transformers registers the Linear as "classifier" on the model itself, the dropout has
// no weights).
struct DropoutLinear {
  std::shared_ptr<nn::Linear> linear;
  float dropout_p = 0;
  Tensor forward(const Tensor& x, bool training) const { return linear->forward(dropout(x, dropout_p, training)); }
};

// The outputs and loss of a sequence-classification head: "logits" and, with "labels", "loss".
NamedOutputs sequence_classification_outputs(const Tensor& logits, const Labels& labels, const HeadConfig& head,
                                              const std::string& architecture);
// Token classification: "logits" (B, T, C) and, with "labels" ((B, T), -100 ignored), "loss".
NamedOutputs token_classification_outputs(const Tensor& logits, const Labels& labels, const std::string& architecture);
// Question answering from (B, T, 2) logits: "start_logits", "end_logits" and, with both
// "start_positions" and "end_positions", "loss". When `dropped_padding` (the model ran under
// padding-free execution, nn::ExecutionOptions::padding_free_active: its encoder output is zero at
// padded positions) the logits at positions attention_mask marks as padding are set to -1e4 (exp
// underflows to 0, the loss stays finite), so no span starts or ends there and the loss leaves
// them out; as transformers does, the default path keeps them in its softmax.
NamedOutputs question_answering_outputs(const Tensor& logits, const Labels& labels, const std::string& architecture,
                                        const Tensor& attention_mask = Tensor(), bool dropped_padding = false);

}  // namespace xg::models
