#include "models/albert/albert_heads.hpp"

namespace xg::models {

AlbertHeadModel::AlbertHeadModel(const AlbertConfig& c, HeadConfig h, bool add_pooling_layer)
    : AlbertPreTrainedModel(c, "albert."), head(std::move(h)) {
  head.validate();
  albert = register_module("albert", std::make_shared<AlbertModel>(c, add_pooling_layer));
}

nlohmann::json AlbertHeadModel::family_config_json() const {
  nlohmann::json j = config.to_json();
  head.add_to_json(j);
  j.erase("classifier_dropout");  // ALBERT's is classifier_dropout_prob, one of its own fields
  return j;
}

AlbertForSequenceClassification::AlbertForSequenceClassification(const AlbertConfig& c, HeadConfig h)
    : AlbertHeadModel(c, std::move(h), /*add_pooling_layer=*/true) {
  classifier = {register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, head.num_labels())), c.classifier_dropout_prob};
}

Tensor AlbertForSequenceClassification::forward(const ModelInputs& in) {
  return classifier.forward(albert->forward_first_tokens(in).pooler_output, is_training());
}

NamedOutputs AlbertForSequenceClassification::forward_named(const ModelInputs& in, const Labels& labels) {
  return sequence_classification_outputs(forward(in), labels, head, kArchitecture);
}

AlbertForTokenClassification::AlbertForTokenClassification(const AlbertConfig& c, HeadConfig h)
    : AlbertHeadModel(c, std::move(h), /*add_pooling_layer=*/false) {
  classifier = {register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, head.num_labels())), c.classifier_dropout_prob};
}

Tensor AlbertForTokenClassification::forward(const ModelInputs& in) {
  return classifier.forward(albert->forward(in).last_hidden_state, is_training());
}

NamedOutputs AlbertForTokenClassification::forward_named(const ModelInputs& in, const Labels& labels) {
  return token_classification_outputs(forward(in), labels, kArchitecture);
}

AlbertForQuestionAnswering::AlbertForQuestionAnswering(const AlbertConfig& c, HeadConfig h)
    : AlbertHeadModel(c, span_head(std::move(h), kArchitecture), /*add_pooling_layer=*/false) {
  qa_outputs = register_module("qa_outputs", std::make_shared<nn::Linear>(c.hidden_size, 2));
}

Tensor AlbertForQuestionAnswering::forward(const ModelInputs& in) { return qa_outputs->forward(albert->forward(in).last_hidden_state); }

NamedOutputs AlbertForQuestionAnswering::forward_named(const ModelInputs& in, const Labels& labels) {
  return question_answering_outputs(forward(in), labels, kArchitecture, in.attention_mask,
                                    execution().padding_free_active());
}

AlbertForMultipleChoice::AlbertForMultipleChoice(const AlbertConfig& c, HeadConfig h)
    : AlbertHeadModel(c, std::move(h), /*add_pooling_layer=*/true) {
  classifier = {register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, 1)), c.classifier_dropout_prob};
}

NamedOutputs AlbertForMultipleChoice::forward_named(const ModelInputs& in, const Labels& labels) {
  const auto [flat, choices] = flatten_choices(in);
  const Tensor pooled = albert->forward_first_tokens(flat).pooler_output;
  return multiple_choice_outputs(classifier.forward(pooled, is_training()), choices, labels, kArchitecture);
}

}  // namespace xg::models
