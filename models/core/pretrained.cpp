#include "models/core/pretrained.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "models/core/pretraining.hpp"

namespace xg::models {

nlohmann::json PretrainedModel::config_json() const {
  nlohmann::json j = family_config_json();
  j["model_type"] = model_type();
  j["architectures"] = {architecture()};
  return j;
}

void PretrainedModel::share_encoder_of(PretrainedModel& other) {
  PretrainedModel& base = base_model();
  if (&base == this)
    throw std::invalid_argument(fmt::format("[share_encoder] {} has no encoder of its own to share with {}", architecture(),
                                            other.architecture()));
  if (dynamic_cast<const PretrainingHeads*>(this))  // its head holds the old embeddings' tensor
    throw std::invalid_argument(fmt::format("[share_encoder] {} ties its language-model decoder to its own word embeddings: "
                                            "taking those of {} would untie them", architecture(), other.architecture()));
  base.share_encoder_of(other.base_model());
}

Tensor PretrainedModel::first_token_states(const ModelInputs&) {
  throw std::invalid_argument(fmt::format("[first_token_states] {} ({}) has no first-token forward{}", architecture(), model_type(),
                                          &base_model() != this ? "; ask its base_model()" : ""));
}

void check_can_share_encoder(const PretrainedModel& self, const PretrainedModel& other) {
  if (self.model_type() != other.model_type() || self.architecture() != other.architecture())
    throw std::invalid_argument(fmt::format("[share_encoder] a {} ({}) cannot share the encoder of a {} ({})", self.architecture(),
                                            self.model_type(), other.architecture(), other.model_type()));
  const nlohmann::json a = self.family_config_json(), b = other.family_config_json();
  for (const auto& [key, value] : a.items())
    if (!b.contains(key) || b.at(key) != value)
      throw std::invalid_argument(fmt::format("[share_encoder] {}: {} is {} here and {} in the encoder to share", self.architecture(),
                                              key, value.dump(), b.contains(key) ? b.at(key).dump() : "absent"));
}

void check_label_names(const Labels& labels, const std::vector<std::string>& known, const std::string& architecture) {
  for (const auto& [name, _] : labels)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw std::invalid_argument(fmt::format("[{}] unknown label '{}' (this model takes: {})", architecture, name,
                                              known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
}

namespace {
void check_int64_labels(const Tensor& labels, const char* name) {
  if (!labels.defined() || labels.dtype() != Dtype::Int64)
    throw std::invalid_argument(fmt::format("[loss] {} must be an int64 tensor{}", name,
                                            labels.defined() ? fmt::format(", got {}", dtype_name(labels.dtype())) : ""));
}
}  // namespace

Tensor token_labels_loss(const Tensor& logits, const Tensor& labels) {
  check_int64_labels(labels, "labels");
  const size_t rows = logits.numel() / logits.size(-1);
  if (labels.numel() != rows)
    throw std::invalid_argument(fmt::format("[loss] {} token labels for {} positions", labels.numel(), rows));
  return cross_entropy(reshape(logits, {long(rows), -1}), reshape(labels, {long(rows)}), -100);
}

Tensor sequence_labels_loss(const Tensor& logits, const Tensor& labels, const char* name) {
  check_int64_labels(labels, name);
  if (labels.numel() != logits.size(0))
    throw std::invalid_argument(fmt::format("[loss] {} {} values for a batch of {}", labels.numel(), name, logits.size(0)));
  return cross_entropy(logits, reshape(labels, {long(labels.numel())}));
}

}  // namespace xg::models
