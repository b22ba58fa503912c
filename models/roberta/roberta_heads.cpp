#include "models/roberta/roberta_heads.hpp"

namespace xg::models {

RobertaHeadModel::RobertaHeadModel(const RobertaConfig& c, HeadConfig h, bool add_pooling_layer)
    : BertPreTrainedModel(c, "roberta."), head(std::move(h)) {
  head.validate();
  roberta = register_module("roberta", std::make_shared<RobertaModel>(c, add_pooling_layer));
}

nlohmann::json RobertaHeadModel::family_config_json() const {
  nlohmann::json j = roberta->roberta_config.to_json();
  head.add_to_json(j);
  return j;
}

RobertaClassificationHead::RobertaClassificationHead(const RobertaConfig& c, const HeadConfig& head)
    : dropout_p(head.dropout_or(c.hidden_dropout_prob)) {
  dense = register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
  out_proj = register_module("out_proj", std::make_shared<nn::Linear>(c.hidden_size, head.num_labels()));
}

Tensor RobertaClassificationHead::forward(const Tensor& hidden) {
  const Tensor first = reshape(contiguous(slice(hidden, 1, 0, 1)), {long(hidden.size(0)), long(hidden.size(2))});  // <s>
  const Tensor h = tanh(dense->forward(dropout(first, dropout_p, is_training())));
  return out_proj->forward(dropout(h, dropout_p, is_training()));
}

RobertaForSequenceClassification::RobertaForSequenceClassification(const RobertaConfig& c, HeadConfig h)
    : RobertaHeadModel(c, std::move(h)) {
  classifier = register_module("classifier", std::make_shared<RobertaClassificationHead>(c, head));
}

Tensor RobertaForSequenceClassification::forward(const ModelInputs& in) {
  return classifier->forward(roberta->forward_first_tokens(in).last_hidden_state);
}

NamedOutputs RobertaForSequenceClassification::forward_named(const ModelInputs& in, const Labels& labels) {
  return sequence_classification_outputs(forward(in), labels, head, kArchitecture);
}

RobertaForTokenClassification::RobertaForTokenClassification(const RobertaConfig& c, HeadConfig h)
    : RobertaHeadModel(c, std::move(h)) {
  classifier = {register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, head.num_labels())),
                head.dropout_or(c.hidden_dropout_prob)};
}

Tensor RobertaForTokenClassification::forward(const ModelInputs& in) {
  return classifier.forward(roberta->forward(in).last_hidden_state, is_training());
}

NamedOutputs RobertaForTokenClassification::forward_named(const ModelInputs& in, const Labels& labels) {
  return token_classification_outputs(forward(in), labels, kArchitecture);
}

RobertaForQuestionAnswering::RobertaForQuestionAnswering(const RobertaConfig& c, HeadConfig h)
    : RobertaHeadModel(c, span_head(std::move(h), kArchitecture)) {
  qa_outputs = register_module("qa_outputs", std::make_shared<nn::Linear>(c.hidden_size, 2));
}

Tensor RobertaForQuestionAnswering::forward(const ModelInputs& in) {
  return qa_outputs->forward(roberta->forward(in).last_hidden_state);
}

NamedOutputs RobertaForQuestionAnswering::forward_named(const ModelInputs& in, const Labels& labels) {
  return question_answering_outputs(forward(in), labels, kArchitecture, in.attention_mask,
                                    execution().padding_free_active());
}

RobertaForMultipleChoice::RobertaForMultipleChoice(const RobertaConfig& c, HeadConfig h)
    : RobertaHeadModel(c, std::move(h), /*add_pooling_layer=*/true) {
  classifier = {register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, 1)), c.hidden_dropout_prob};
}

NamedOutputs RobertaForMultipleChoice::forward_named(const ModelInputs& in, const Labels& labels) {
  const auto [flat, choices] = flatten_choices(in);
  const Tensor pooled = roberta->forward_first_tokens(flat).pooler_output;
  return multiple_choice_outputs(classifier.forward(pooled, is_training()), choices, labels, kArchitecture);
}

}  // namespace xg::models
