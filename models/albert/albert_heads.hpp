#pragma once
// ALBERT's task heads with transformers' classes, names and losses: AlbertForSequenceClassification
// (pooler, dropout of classifier_dropout_prob, "classifier"), AlbertForTokenClassification (no
// pooler, "classifier" on every position) and AlbertForQuestionAnswering (no pooler, "qa_outputs").
// ALBERT's own classifier_dropout_prob sets their dropout, as in transformers.
#include "models/albert/albert.hpp"
#include "models/core/heads.hpp"

namespace xg::models {

class AlbertHeadModel : public AlbertPreTrainedModel {
 public:
  AlbertHeadModel(const AlbertConfig& c, HeadConfig head, bool add_pooling_layer);
  nlohmann::json family_config_json() const override;
  PretrainedModel& base_model() override { return *albert; }
  HeadConfig head;
  std::shared_ptr<AlbertModel> albert;
};

class AlbertForSequenceClassification : public AlbertHeadModel {
 public:
  static constexpr const char* kArchitecture = "AlbertForSequenceClassification";
  explicit AlbertForSequenceClassification(const AlbertConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // (B, num_labels) from the pooled first token
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  DropoutLinear classifier;
};

class AlbertForTokenClassification : public AlbertHeadModel {
 public:
  static constexpr const char* kArchitecture = "AlbertForTokenClassification";
  explicit AlbertForTokenClassification(const AlbertConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // (B, T, num_labels)
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  DropoutLinear classifier;
};

class AlbertForQuestionAnswering : public AlbertHeadModel {
 public:
  static constexpr const char* kArchitecture = "AlbertForQuestionAnswering";
  explicit AlbertForQuestionAnswering(const AlbertConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // (B, T, 2)
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  std::shared_ptr<nn::Linear> qa_outputs;
};

// One score per choice from the pooled first token (dropout of classifier_dropout_prob); inputs
// are (B, C, T) tensors.
class AlbertForMultipleChoice : public AlbertHeadModel {
 public:
  static constexpr const char* kArchitecture = "AlbertForMultipleChoice";
  explicit AlbertForMultipleChoice(const AlbertConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  DropoutLinear classifier;
};

}  // namespace xg::models
