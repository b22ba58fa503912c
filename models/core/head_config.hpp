#pragma once
// The config.json fields every task head shares, with Hugging Face's names and semantics
// (transformers' PretrainedConfig): id2label / label2id (num_labels is their size), problem_type
// and the family's classifier_dropout. They sit beside the family's own fields in one config.json.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace xg::models {

struct HeadConfig {
  static constexpr const char* kName = "HeadConfig";
  // The label of each id; its size is num_labels. transformers' default: LABEL_0, LABEL_1.
  std::vector<std::string> id2label = {"LABEL_0", "LABEL_1"};
  // "" (inferred from num_labels and the labels' dtype, as transformers does when it is null),
  // "regression", "single_label_classification" or "multi_label_classification".
  std::string problem_type;
  // Dropout before the classifier; unset (null): the family's hidden_dropout_prob.
  std::optional<float> classifier_dropout;

  size_t num_labels() const { return id2label.size(); }
  // Whether the head's one output is a regression's value, as transformers decides: one label and
  // no classification problem_type.
  bool is_regression() const {
    return num_labels() == 1 && problem_type != "single_label_classification" && problem_type != "multi_label_classification";
  }
  // num_labels generic labels LABEL_0 ... LABEL_{n-1}.
  static HeadConfig with_num_labels(size_t num_labels);
  // The given labels in id order (they must be distinct and not empty).
  static HeadConfig with_labels(std::vector<std::string> labels);
  // The id of a label; throws naming it and the known labels.
  int64_t label_id(const std::string& label) const;
  float dropout_or(float hidden_dropout) const { return classifier_dropout.value_or(hidden_dropout); }
  // Throws naming the field: num_labels positive, labels distinct, a known problem_type, the
  // dropout in [0, 1).
  void validate() const;

  // Adds id2label (keys are strings in JSON, as transformers writes them), label2id, problem_type
  // and classifier_dropout (null when unset) to a config.json object.
  void add_to_json(nlohmann::json& j) const;
  // As transformers reads them: id2label decides num_labels (label2id is then only written back
  // as its inverse); without it label2id, else "num_labels", else 2 generic labels. Errors name
  // `source` and the field.
  static HeadConfig from_json(const nlohmann::json& j, const std::string& source);
};

}  // namespace xg::models
