#pragma once
// RoBERTa's task heads with transformers' classes, names and losses: RobertaForSequenceClassification
// (no pooler; "classifier" is RobertaClassificationHead: dense + tanh + out_proj on the <s> state,
// dropout before each), RobertaForTokenClassification ("classifier" on every position) and
// RobertaForQuestionAnswering ("qa_outputs"). Their config.json holds RoBERTa's fields and the head's.
#include "models/core/heads.hpp"
#include "models/roberta/roberta.hpp"

namespace xg::models {

// A RoBERTa model with a task head: RoBERTa's names and config fields plus the head's.
class RobertaHeadModel : public BertPreTrainedModel {
 public:
  RobertaHeadModel(const RobertaConfig& c, HeadConfig head, bool add_pooling_layer = false);
  std::string model_type() const override { return RobertaConfig::kModelType; }
  nlohmann::json family_config_json() const override;
  std::string name_from_checkpoint(const std::string& n) const override { return roberta_name_from_checkpoint(n, true); }
  bool is_head_tensor(const std::string& name) const override { return is_roberta_head_tensor(name); }
  PretrainedModel& base_model() override { return *roberta; }
  HeadConfig head;
  std::shared_ptr<RobertaModel> roberta;  // without a pooler, as transformers builds it, but for multiple choice
};

// dropout, dense, tanh, dropout, out_proj on the first token's hidden state.
class RobertaClassificationHead : public nn::Module {
 public:
  RobertaClassificationHead(const RobertaConfig& c, const HeadConfig& head);
  Tensor forward(const Tensor& hidden);  // (B, T, H) -> (B, num_labels)
  std::shared_ptr<nn::Linear> dense, out_proj;
  float dropout_p;
};

class RobertaForSequenceClassification : public RobertaHeadModel {
 public:
  static constexpr const char* kArchitecture = "RobertaForSequenceClassification";
  explicit RobertaForSequenceClassification(const RobertaConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // (B, num_labels)
  // "logits" and, with "labels", "loss" as BertForSequenceClassification's (heads.hpp).
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  std::shared_ptr<RobertaClassificationHead> classifier;
};

class RobertaForTokenClassification : public RobertaHeadModel {
 public:
  static constexpr const char* kArchitecture = "RobertaForTokenClassification";
  explicit RobertaForTokenClassification(const RobertaConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // (B, T, num_labels)
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  DropoutLinear classifier;
};

class RobertaForQuestionAnswering : public RobertaHeadModel {
 public:
  static constexpr const char* kArchitecture = "RobertaForQuestionAnswering";
  explicit RobertaForQuestionAnswering(const RobertaConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // (B, T, 2)
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  std::shared_ptr<nn::Linear> qa_outputs;
};

// One score per choice from the pooled <s> state (dropout of hidden_dropout_prob, as transformers);
// inputs are (B, C, T) tensors.
class RobertaForMultipleChoice : public RobertaHeadModel {
 public:
  static constexpr const char* kArchitecture = "RobertaForMultipleChoice";
  explicit RobertaForMultipleChoice(const RobertaConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  DropoutLinear classifier;
};

}  // namespace xg::models
