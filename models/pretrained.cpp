#include "models/pretrained.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace xg::models {

nlohmann::json PretrainedModel::config_json() const {
  nlohmann::json j = family_config_json();
  j["model_type"] = model_type();
  j["architectures"] = {architecture()};
  return j;
}

void check_label_names(const Labels& labels, const std::vector<std::string>& known, const std::string& architecture) {
  for (const auto& [name, _] : labels)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw std::invalid_argument(fmt::format("[{}] unknown label '{}' (this model takes: {})", architecture, name,
                                              known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
}

Tensor token_labels_loss(const Tensor& logits, const std::vector<int64_t>& labels) {
  const size_t rows = logits.numel() / logits.size(-1);
  if (labels.size() != rows)
    throw std::invalid_argument(fmt::format("[loss] {} token labels for {} positions", labels.size(), rows));
  return cross_entropy(reshape(logits, {long(rows), -1}), labels, -100);
}

Tensor sequence_labels_loss(const Tensor& logits, const std::vector<int64_t>& labels, const char* name) {
  if (labels.size() != logits.size(0))
    throw std::invalid_argument(fmt::format("[loss] {} {} values for a batch of {}", labels.size(), name, logits.size(0)));
  return cross_entropy(logits, labels);
}

}  // namespace xg::models
