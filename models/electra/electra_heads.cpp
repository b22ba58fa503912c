#include "models/electra/electra_heads.hpp"

namespace xg::models {

namespace {
Tensor first_token_rows(const Tensor& first_tokens) {  // (B, 1, H) -> (B, H)
  return reshape(contiguous(slice(first_tokens, 1, 0, 1)), {long(first_tokens.size(0)), long(first_tokens.size(2))});
}
}  // namespace

ElectraHeadModel::ElectraHeadModel(const ElectraConfig& c, HeadConfig h) : ElectraPreTrainedModel(c, "electra."), head(std::move(h)) {
  head.validate();
  electra = register_module("electra", std::make_shared<ElectraModel>(c));
}

nlohmann::json ElectraHeadModel::family_config_json() const {
  nlohmann::json j = ElectraPreTrainedModel::family_config_json();
  head.add_to_json(j);
  return j;
}

ElectraClassificationHead::ElectraClassificationHead(const ElectraConfig& c, const HeadConfig& head)
    : dropout_p(head.dropout_or(c.hidden_dropout_prob)) {
  dense = register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
  out_proj = register_module("out_proj", std::make_shared<nn::Linear>(c.hidden_size, head.num_labels()));
}

// GELU where BERT's pooler has tanh, as the ELECTRA authors (and transformers) do.
Tensor ElectraClassificationHead::forward(const Tensor& first_tokens) {
  const Tensor h = nn::activate(dense->forward(dropout(first_token_rows(first_tokens), dropout_p, is_training())), nn::Activation::Gelu);
  return out_proj->forward(dropout(h, dropout_p, is_training()));
}

ElectraForSequenceClassification::ElectraForSequenceClassification(const ElectraConfig& c, HeadConfig h)
    : ElectraHeadModel(c, std::move(h)) {
  classifier = register_module("classifier", std::make_shared<ElectraClassificationHead>(c, head));
}

Tensor ElectraForSequenceClassification::forward(const ModelInputs& in) {
  return classifier->forward(electra->first_token_states(in));
}

NamedOutputs ElectraForSequenceClassification::forward_named(const ModelInputs& in, const Labels& labels) {
  return sequence_classification_outputs(forward(in), labels, head, kArchitecture);
}

ElectraForTokenClassification::ElectraForTokenClassification(const ElectraConfig& c, HeadConfig h)
    : ElectraHeadModel(c, std::move(h)) {
  classifier = {register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, head.num_labels())),
                head.dropout_or(c.hidden_dropout_prob)};
}

Tensor ElectraForTokenClassification::forward(const ModelInputs& in) { return classifier.forward(electra->forward(in), is_training()); }

NamedOutputs ElectraForTokenClassification::forward_named(const ModelInputs& in, const Labels& labels) {
  return token_classification_outputs(forward(in), labels, kArchitecture);
}

ElectraForQuestionAnswering::ElectraForQuestionAnswering(const ElectraConfig& c, HeadConfig h)
    : ElectraHeadModel(c, span_head(std::move(h), kArchitecture)) {
  qa_outputs = register_module("qa_outputs", std::make_shared<nn::Linear>(c.hidden_size, 2));
}

Tensor ElectraForQuestionAnswering::forward(const ModelInputs& in) { return qa_outputs->forward(electra->forward(in)); }

NamedOutputs ElectraForQuestionAnswering::forward_named(const ModelInputs& in, const Labels& labels) {
  return question_answering_outputs(forward(in), labels, kArchitecture, in.attention_mask, execution().padding_free_active());
}

ElectraSequenceSummary::ElectraSequenceSummary(const ElectraConfig& c)
    : activated(!c.summary_activation.empty()), first_dropout_p(c.summary_first_dropout), last_dropout_p(c.summary_last_dropout) {
  if (activated) act = nn::activation_from_name(c.summary_activation);
  if (c.summary_use_proj) summary = register_module("summary", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
}

Tensor ElectraSequenceSummary::forward(const Tensor& first_tokens) {
  Tensor h = dropout(first_token_rows(first_tokens), first_dropout_p, is_training());
  if (summary) h = summary->forward(h);
  if (activated) h = nn::activate(h, act);
  return dropout(h, last_dropout_p, is_training());
}

ElectraForMultipleChoice::ElectraForMultipleChoice(const ElectraConfig& c, HeadConfig h) : ElectraHeadModel(c, std::move(h)) {
  sequence_summary = register_module("sequence_summary", std::make_shared<ElectraSequenceSummary>(c));
  classifier = register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, 1));
}

NamedOutputs ElectraForMultipleChoice::forward_named(const ModelInputs& in, const Labels& labels) {
  const auto [flat, choices] = flatten_choices(in);
  const Tensor scores = classifier->forward(sequence_summary->forward(electra->first_token_states(flat)));
  return multiple_choice_outputs(scores, choices, labels, kArchitecture);
}

}  // namespace xg::models
