#include "models/bert/bert_heads.hpp"

#include <fmt/format.h>

namespace xg::models {

BertHeadModel::BertHeadModel(const BertConfig& c, HeadConfig h) : BertPreTrainedModel(c, "bert."), head(std::move(h)) {
  head.validate();
}

nlohmann::json BertHeadModel::family_config_json() const {
  nlohmann::json j = config.to_json();
  head.add_to_json(j);
  return j;
}

BertForSequenceClassification::BertForSequenceClassification(const BertConfig& c, HeadConfig h)
    : BertHeadModel(c, std::move(h)) {
  bert = register_module("bert", std::make_shared<BertModel>(c));
  classifier = {register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, head.num_labels())),
                head.dropout_or(c.hidden_dropout_prob)};
}

Tensor BertForSequenceClassification::forward(const ModelInputs& in) {
  return classifier.forward(bert->forward_first_tokens(in).pooler_output, is_training());
}

NamedOutputs BertForSequenceClassification::forward_named(const ModelInputs& in, const Labels& labels) {
  return sequence_classification_outputs(forward(in), labels, head, kArchitecture);
}

BertForTokenClassification::BertForTokenClassification(const BertConfig& c, HeadConfig h) : BertHeadModel(c, std::move(h)) {
  bert = register_module("bert", std::make_shared<BertModel>(c, /*add_pooling_layer=*/false));
  classifier = {register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, head.num_labels())),
                head.dropout_or(c.hidden_dropout_prob)};
}

Tensor BertForTokenClassification::forward(const ModelInputs& in) {
  return classifier.forward(bert->forward(in).last_hidden_state, is_training());
}

NamedOutputs BertForTokenClassification::forward_named(const ModelInputs& in, const Labels& labels) {
  return token_classification_outputs(forward(in), labels, kArchitecture);
}

BertForQuestionAnswering::BertForQuestionAnswering(const BertConfig& c, HeadConfig h)
    : BertHeadModel(c, span_head(std::move(h), kArchitecture)) {
  bert = register_module("bert", std::make_shared<BertModel>(c, /*add_pooling_layer=*/false));
  qa_outputs = register_module("qa_outputs", std::make_shared<nn::Linear>(c.hidden_size, 2));
}

Tensor BertForQuestionAnswering::forward(const ModelInputs& in) { return qa_outputs->forward(bert->forward(in).last_hidden_state); }

NamedOutputs BertForQuestionAnswering::forward_named(const ModelInputs& in, const Labels& labels) {
  return question_answering_outputs(forward(in), labels, kArchitecture, in.attention_mask,
                                    execution().padding_free_active());
}

BertForMultipleChoice::BertForMultipleChoice(const BertConfig& c, HeadConfig h) : BertHeadModel(c, std::move(h)) {
  bert = register_module("bert", std::make_shared<BertModel>(c));
  classifier = {register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, 1)), head.dropout_or(c.hidden_dropout_prob)};
}

NamedOutputs BertForMultipleChoice::forward_named(const ModelInputs& in, const Labels& labels) {
  const auto [flat, choices] = flatten_choices(in);
  const Tensor pooled = bert->forward_first_tokens(flat).pooler_output;
  return multiple_choice_outputs(classifier.forward(pooled, is_training()), choices, labels, kArchitecture);
}

}  // namespace xg::models
