#include "models/core/heads.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "nn/transformer.hpp"

namespace xg::models {

namespace {
Tensor as_float(const Tensor& t) { return t.dtype() == Dtype::Float32 ? t : cast(t, Dtype::Float32); }

void check_label_shape(const Tensor& labels, const Shape& expected, const char* problem) {
  if (labels.numel() != shape_numel(expected))
    throw std::invalid_argument(fmt::format("[loss] {}: {} labels of shape {} for logits that need {}", problem,
                                            labels.numel(), shape_str(labels.shape()), shape_str(expected)));
}

std::string problem_type_for(const Tensor& labels, const HeadConfig& head) {
  if (!head.problem_type.empty()) return head.problem_type;
  if (head.num_labels() == 1) return "regression";
  return labels.dtype() == Dtype::Int64 ? "single_label_classification" : "multi_label_classification";
}
}  // namespace

Tensor sequence_classification_loss(const Tensor& logits, const Tensor& labels, const HeadConfig& head) {
  if (!labels.defined()) throw std::invalid_argument("[loss] sequence classification labels are undefined");
  const long B = long(logits.size(0)), C = long(logits.size(1));
  const std::string problem = problem_type_for(labels, head);
  if (problem == "regression") {
    check_label_shape(labels, logits.shape(), "regression");
    return mse_loss(logits, reshape(as_float(labels), {B, C}));
  }
  if (problem == "single_label_classification") {
    if (labels.dtype() != Dtype::Int64)
      throw std::invalid_argument(fmt::format("[loss] single-label classification needs int64 labels, got {}", dtype_name(labels.dtype())));
    check_label_shape(labels, {size_t(B)}, "single-label classification");
    const auto ids = labels.to_ints();
    for (int64_t id : ids)
      if (id != -100 && (id < 0 || id >= C))
        throw std::out_of_range(fmt::format("[loss] label {} is outside the {} classes", id, C));
    return cross_entropy(logits, reshape(labels, {B}), -100);
  }
  check_label_shape(labels, logits.shape(), "multi-label classification");
  return bce_with_logits(logits, reshape(as_float(labels), {B, C}));
}

std::pair<Tensor, Tensor> split_span_logits(const Tensor& logits) {
  if (logits.dim() != 3 || logits.size(2) != 2)
    throw std::invalid_argument(fmt::format("[qa] span logits must be (B, T, 2), got {}", shape_str(logits.shape())));
  const long B = long(logits.size(0)), T = long(logits.size(1));
  return {reshape(contiguous(slice(logits, 2, 0, 1)), {B, T}), reshape(contiguous(slice(logits, 2, 1, 2)), {B, T})};
}

namespace {
// transformers clamps positions to [0, T] and ignores T: answers outside the window add no loss.
Tensor clamped_positions(const Tensor& positions, size_t batch, size_t T, const char* name) {
  if (!positions.defined() || positions.dtype() != Dtype::Int64)
    throw std::invalid_argument(fmt::format("[loss] {} must be an int64 tensor", name));
  if (positions.numel() != batch)
    throw std::invalid_argument(fmt::format("[loss] {} {} for a batch of {}", positions.numel(), name, batch));
  std::vector<int64_t> p = positions.to_ints();
  for (auto& v : p) v = std::clamp<int64_t>(v, 0, int64_t(T));
  return Tensor::from_ints(p, {batch});
}
}  // namespace

Tensor question_answering_loss(const Tensor& start_logits, const Tensor& end_logits, const Tensor& start_positions,
                               const Tensor& end_positions) {
  const size_t B = start_logits.size(0), T = start_logits.size(1);
  const Tensor start = cross_entropy(start_logits, clamped_positions(start_positions, B, T, "start_positions"), int64_t(T));
  const Tensor end = cross_entropy(end_logits, clamped_positions(end_positions, B, T, "end_positions"), int64_t(T));
  return mul(add(start, end), Tensor::scalar(0.5f));
}

std::pair<ModelInputs, size_t> flatten_choices(const ModelInputs& in) {
  if (!in.input_ids.defined() || in.input_ids.dim() != 3)
    throw std::invalid_argument(fmt::format("[multiple_choice] input_ids must be (batch, choices, tokens), got {}",
                                            in.input_ids.defined() ? shape_str(in.input_ids.shape()) : "none"));
  const size_t choices = in.input_ids.size(1);
  const long rows = long(in.input_ids.size(0) * choices), T = long(in.input_ids.size(2));
  auto flat = [&](const Tensor& t, const char* name) {
    if (!t.defined()) return t;
    if (t.shape() != in.input_ids.shape())
      throw std::invalid_argument(fmt::format("[multiple_choice] {} has shape {}, input_ids {}", name, shape_str(t.shape()),
                                              shape_str(in.input_ids.shape())));
    return reshape(contiguous(t), {rows, T});
  };
  ModelInputs out;
  out.input_ids = flat(in.input_ids, "input_ids");
  out.token_type_ids = flat(in.token_type_ids, "token_type_ids");
  out.position_ids = flat(in.position_ids, "position_ids");
  out.attention_mask = flat(in.attention_mask, "attention_mask");
  return {out, choices};
}

NamedOutputs multiple_choice_outputs(const Tensor& scores, size_t num_choices, const Labels& labels,
                                     const std::string& architecture) {
  check_label_names(labels, {"labels"}, architecture);
  NamedOutputs out{{"logits", reshape(scores, {-1, long(num_choices)})}};
  if (labels.count("labels")) out["loss"] = sequence_labels_loss(out["logits"], labels.at("labels"), "labels");
  return out;
}

HeadConfig span_head(HeadConfig head, const char* architecture) {
  if (head.num_labels() != 2)
    throw std::invalid_argument(
        fmt::format("[{}] num_labels is {}: question answering predicts 2 (start and end)", architecture, head.num_labels()));
  return head;
}

NamedOutputs sequence_classification_outputs(const Tensor& logits, const Labels& labels, const HeadConfig& head,
                                              const std::string& architecture) {
  check_label_names(labels, {"labels"}, architecture);
  NamedOutputs out{{"logits", logits}};
  if (labels.count("labels")) out["loss"] = sequence_classification_loss(logits, labels.at("labels"), head);
  return out;
}

NamedOutputs token_classification_outputs(const Tensor& logits, const Labels& labels, const std::string& architecture) {
  check_label_names(labels, {"labels"}, architecture);
  NamedOutputs out{{"logits", logits}};
  if (labels.count("labels")) out["loss"] = token_labels_loss(logits, labels.at("labels"));
  return out;
}

namespace {
constexpr float kPaddedSpanLogit = -1e4f;
}  // namespace

NamedOutputs question_answering_outputs(const Tensor& logits, const Labels& labels, const std::string& architecture,
                                        const Tensor& attention_mask, bool dropped_padding) {
  check_label_names(labels, {"start_positions", "end_positions"}, architecture);
  auto [start, end] = split_span_logits(logits);
  if (dropped_padding && attention_mask.defined()) {
    if (attention_mask.shape() != start.shape())
      throw std::invalid_argument(fmt::format("[{}] attention_mask {} does not match the logits' {}", architecture,
                                              shape_str(attention_mask.shape()), shape_str(start.shape())));
    const Tensor m = attention_mask.contiguous();
    std::vector<float> padded(m.numel());
    for (size_t i = 0; i < padded.size(); ++i) padded[i] = m.data()[i] == 0.f ? 1.f : 0.f;
    const Tensor where_padded = Tensor::from_vector(padded, start.shape());
    // -1e4, not lowest(): a label on padding or an example without a real token keeps a finite loss
    start = masked_fill(start, where_padded, kPaddedSpanLogit);
    end = masked_fill(end, where_padded, kPaddedSpanLogit);
  }
  NamedOutputs out{{"start_logits", start}, {"end_logits", end}};
  if (labels.size() == 1)
    throw std::invalid_argument(fmt::format("[{}] the loss needs both start_positions and end_positions", architecture));
  if (!labels.empty()) out["loss"] = question_answering_loss(start, end, labels.at("start_positions"), labels.at("end_positions"));
  return out;
}

}  // namespace xg::models
