#pragma once
// ELECTRA's task heads with transformers' classes, names and losses: ElectraForSequenceClassification
// ("classifier" is ElectraClassificationHead: dropout, dense, GELU, dropout, out_proj on the first
// token), ElectraForTokenClassification ("classifier" on every position), ElectraForQuestionAnswering
// ("qa_outputs") and ElectraForMultipleChoice ("sequence_summary" of the first token, then
// "classifier"). None has a pooler: ELECTRA's discriminator has none.
#include "models/core/heads.hpp"
#include "models/electra/electra.hpp"

namespace xg::models {

class ElectraHeadModel : public ElectraPreTrainedModel {
 public:
  ElectraHeadModel(const ElectraConfig& c, HeadConfig head);
  nlohmann::json family_config_json() const override;
  PretrainedModel& base_model() override { return *electra; }
  HeadConfig head;
  std::shared_ptr<ElectraModel> electra;
};

class ElectraClassificationHead : public nn::Module {
 public:
  ElectraClassificationHead(const ElectraConfig& c, const HeadConfig& head);
  Tensor forward(const Tensor& first_tokens);  // (B, 1, H) -> (B, num_labels)
  std::shared_ptr<nn::Linear> dense, out_proj;
  float dropout_p;
};

class ElectraForSequenceClassification : public ElectraHeadModel {
 public:
  static constexpr const char* kArchitecture = "ElectraForSequenceClassification";
  explicit ElectraForSequenceClassification(const ElectraConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // (B, num_labels)
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  std::shared_ptr<ElectraClassificationHead> classifier;
};

class ElectraForTokenClassification : public ElectraHeadModel {
 public:
  static constexpr const char* kArchitecture = "ElectraForTokenClassification";
  explicit ElectraForTokenClassification(const ElectraConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // (B, T, num_labels)
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  DropoutLinear classifier;
};

class ElectraForQuestionAnswering : public ElectraHeadModel {
 public:
  static constexpr const char* kArchitecture = "ElectraForQuestionAnswering";
  explicit ElectraForQuestionAnswering(const ElectraConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // (B, T, 2)
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  std::shared_ptr<nn::Linear> qa_outputs;
};

// transformers' SequenceSummary as ELECTRA configures it: the first token's state, dropout of
// summary_first_dropout, a projection ("summary", when summary_use_proj), summary_activation
// (none when null), dropout of summary_last_dropout.
class ElectraSequenceSummary : public nn::Module {
 public:
  explicit ElectraSequenceSummary(const ElectraConfig& c);
  Tensor forward(const Tensor& first_tokens);  // (B, 1, H) -> (B, H)
  std::shared_ptr<nn::Linear> summary;  // null without summary_use_proj
  bool activated;
  nn::Activation act{};
  float first_dropout_p, last_dropout_p;
};

// One score per choice; inputs are (B, C, T) tensors.
class ElectraForMultipleChoice : public ElectraHeadModel {
 public:
  static constexpr const char* kArchitecture = "ElectraForMultipleChoice";
  explicit ElectraForMultipleChoice(const ElectraConfig& c, HeadConfig head = {});
  std::string architecture() const override { return kArchitecture; }
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  std::shared_ptr<ElectraSequenceSummary> sequence_summary;
  std::shared_ptr<nn::Linear> classifier;
};

}  // namespace xg::models
