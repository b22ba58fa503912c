#pragma once
// BERT's task heads with transformers' classes, names and losses: BertForSequenceClassification
// (pooler + dropout + "classifier"), BertForTokenClassification (no pooler, "classifier" on every
// position) and BertForQuestionAnswering (no pooler, "qa_outputs" giving start and end logits).
// Their config.json holds BERT's fields and the head's (models/core/head_config.hpp).
#include "models/bert/bert.hpp"
#include "models/core/heads.hpp"

namespace xg::models {

// A BERT model with a task head: the config.json fields of both.
class BertHeadModel : public BertPreTrainedModel {
 public:
  BertHeadModel(const BertConfig& c, HeadConfig head);
  nlohmann::json family_config_json() const override;
  PretrainedModel& base_model() override { return *bert; }
  HeadConfig head;
  std::shared_ptr<BertModel> bert;
};

class BertForSequenceClassification : public BertHeadModel {
 public:
  static constexpr const char* kArchitecture = "BertForSequenceClassification";
  explicit BertForSequenceClassification(const BertConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  // (B, num_labels) logits from the pooled [CLS] state.
  Tensor forward(const ModelInputs& in);
  // "logits" and, with "labels" ((B) int64 ids, or float targets for regression and
  // multi-label), "loss" as transformers computes it (heads.hpp).
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  DropoutLinear classifier;
};

class BertForTokenClassification : public BertHeadModel {
 public:
  static constexpr const char* kArchitecture = "BertForTokenClassification";
  explicit BertForTokenClassification(const BertConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // (B, T, num_labels)
  // "logits" and, with "labels" ((B, T), -100 ignored), "loss".
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  DropoutLinear classifier;
};

class BertForQuestionAnswering : public BertHeadModel {
 public:
  static constexpr const char* kArchitecture = "BertForQuestionAnswering";
  // transformers builds qa_outputs with num_labels outputs; span prediction needs 2.
  explicit BertForQuestionAnswering(const BertConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // (B, T, 2): start and end logits
  // "start_logits", "end_logits" (B, T) and, with "start_positions" and "end_positions" (B),
  // "loss": the mean of both cross-entropies, positions outside the window ignored.
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  std::shared_ptr<nn::Linear> qa_outputs;
};

// One score per choice from the pooled [CLS] state; inputs are (B, C, T) tensors, as transformers takes them.
class BertForMultipleChoice : public BertHeadModel {
 public:
  static constexpr const char* kArchitecture = "BertForMultipleChoice";
  explicit BertForMultipleChoice(const BertConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  // "logits" (B, C) and, with "labels" ((B) ids of the right choice), "loss".
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  DropoutLinear classifier;
};

}  // namespace xg::models
