// The registered BERT models: BertModel, BertForPreTraining, BertForMaskedLM.
#include "models/bert/bert.hpp"

#include <fmt/format.h>

namespace xg::models {

BertPreTrainedModel::BertPreTrainedModel(const BertConfig& c, std::string base_prefix)
    : config(c), base_prefix_(std::move(base_prefix)) {
  c.validate();
}

void BertPreTrainedModel::init_weights(Generator& gen) {
  nn::init::bert_init(*this, config.initializer_range, gen);
  // The LM heads' bias is a bare parameter, not a Linear's, so bert_init does not see it.
  apply([](nn::Module& m) {
    if (auto* head = dynamic_cast<BertLMHead*>(&m)) nn::init::zeros_(head->bias);
  });
}

std::string BertPreTrainedModel::name_from_checkpoint(const std::string& file_name) const {
  const std::string n = canonical_bert_name(file_name);
  if (base_prefix_.empty() && n.rfind("bert.", 0) == 0) return n.substr(5);  // into a bare BertModel
  return n;
}

bool BertPreTrainedModel::is_head_tensor(const std::string& name) const {
  // BertForMaskedLM has no pooler, BertModel no heads: either may be absent from a checkpoint.
  for (const char* head : {"cls.", "pooler.", "bert.pooler.", "classifier.", "qa_outputs."})
    if (name.rfind(head, 0) == 0) return true;
  return false;
}

BertModel::BertModel(const BertConfig& c, bool add_pooling_layer, std::shared_ptr<BertEmbeddings> own_embeddings)
    : BertPreTrainedModel(c, "") {
  embeddings = register_module("embeddings", own_embeddings ? std::move(own_embeddings) : std::make_shared<BertEmbeddings>(c));
  encoder = register_module("encoder", std::make_shared<nn::Encoder>(c.transformer_options(), c.num_hidden_layers));
  if (add_pooling_layer) pooler = register_module("pooler", std::make_shared<BertPooler>(c));
}

void BertModel::share_encoder_of(PretrainedModel& other) { share_embeddings_and_encoder<BertModel>(other); }

BertModel::Output BertModel::forward(const ModelInputs& in) { return run(in, nullptr); }
BertModel::Output BertModel::forward(const ModelInputs& in, const nn::OutputRows& rows) { return run(in, &rows); }

BertModel::Output BertModel::forward_first_tokens(const ModelInputs& in) { return run(in, nullptr, true); }

BertModel::Output BertModel::run(const ModelInputs& in, const nn::OutputRows* rows, bool first_tokens) {
  InputLimits limits = config.input_limits();
  limits.first_position = embeddings->first_position();
  in.validate(limits);
  const nn::OutputRows firsts = first_tokens ? nn::OutputRows::first_tokens(in.batch(), in.seq_len()) : nn::OutputRows();
  if (first_tokens) rows = &firsts;
  if (rows && pooler) rows->require_first_positions(in.seq_len(), kArchitecture);  // the pooler's rows
  const Tensor mask = in.attention_mask.defined() ? nn::additive_attention_mask(in.attention_mask) : Tensor();
  const Tensor embedded = embeddings->forward(in);
  Output out;
  out.last_hidden_state = rows ? encoder->forward_rows(embedded, mask, *rows) : encoder->forward(embedded, mask);
  if (pooler) out.pooler_output = pooler->forward(out.last_hidden_state);
  return out;
}

NamedOutputs BertModel::forward_named(const ModelInputs& in, const Labels& labels) {
  check_label_names(labels, {}, kArchitecture);
  const Output o = forward(in);
  NamedOutputs out{{"last_hidden_state", o.last_hidden_state}};
  if (o.pooler_output.defined()) out["pooler_output"] = o.pooler_output;
  return out;
}

BertForPreTraining::BertForPreTraining(const BertConfig& c) : BertPreTrainedModel(c, "bert.") {
  bert = register_module("bert", std::make_shared<BertModel>(c));
  cls = register_module("cls", std::make_shared<BertPreTrainingHeads>(c, bert->embeddings->word_embeddings->weight));
}

PretrainingOutput BertForPreTraining::forward(const ModelInputs& in, const PretrainingTargets& t) {
  check_pretraining_targets(in, t, SentenceTask::NextSentence, "bert");
  const PretrainingRows rows = pretraining_rows(in, t);
  const auto base = bert->forward(in, rows.rows);
  PretrainingOutput out;
  masked_lm_loss(base.last_hidden_state, rows.masked, t,
                 [&](const Tensor& h) { return cls->predictions->forward_sequence(h); }, out);
  add_sentence_loss(cls->seq_relationship->forward(base.pooler_output), t, out);
  return out;
}

BertForPreTraining::FullOutput BertForPreTraining::forward_full(const ModelInputs& in) {
  FullOutput out;
  out.base = bert->forward(in);
  out.prediction_logits = cls->predictions->forward_sequence(out.base.last_hidden_state);
  out.seq_relationship_logits = cls->seq_relationship->forward(out.base.pooler_output);
  return out;
}

NamedOutputs BertForPreTraining::forward_named(const ModelInputs& in, const Labels& labels) {
  check_label_names(labels, {"labels", "next_sentence_label"}, kArchitecture);
  if (labels.size() == 1)
    throw std::invalid_argument(fmt::format("[{}] the loss needs both labels and next_sentence_label", kArchitecture));
  const FullOutput full = forward_full(in);
  NamedOutputs out{{"last_hidden_state", full.base.last_hidden_state},
                   {"pooler_output", full.base.pooler_output},
                   {"prediction_logits", full.prediction_logits},
                   {"seq_relationship_logits", full.seq_relationship_logits}};
  if (labels.empty()) return out;
  out["mlm_loss"] = token_labels_loss(full.prediction_logits, labels.at("labels"));
  out["nsp_loss"] = sequence_labels_loss(full.seq_relationship_logits, labels.at("next_sentence_label"), "next_sentence_label");
  out["loss"] = add(out["mlm_loss"], out["nsp_loss"]);
  return out;
}

BertForMaskedLM::BertForMaskedLM(const BertConfig& c) : BertPreTrainedModel(c, "bert.") {
  bert = register_module("bert", std::make_shared<BertModel>(c, /*add_pooling_layer=*/false));
  cls = register_module("cls", std::make_shared<BertOnlyMLMHead>(c, bert->embeddings->word_embeddings->weight));
}

PretrainingOutput BertForMaskedLM::forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) {
  check_pretraining_targets(in, t, SentenceTask::None, kArchitecture);
  const PretrainingRows rows = pretraining_rows(in, t);
  PretrainingOutput out;
  masked_lm_loss(bert->forward(in, rows.rows).last_hidden_state, rows.masked, t,
                 [&](const Tensor& h) { return cls->predictions->forward_sequence(h); }, out);
  return out;
}

Tensor BertForMaskedLM::forward(const ModelInputs& in) {
  return cls->predictions->forward_sequence(bert->forward(in).last_hidden_state);
}

NamedOutputs BertForMaskedLM::forward_named(const ModelInputs& in, const Labels& labels) {
  check_label_names(labels, {"labels"}, kArchitecture);
  const Tensor hidden = bert->forward(in).last_hidden_state;
  NamedOutputs out{{"last_hidden_state", hidden}, {"logits", cls->predictions->forward_sequence(hidden)}};
  if (labels.count("labels")) out["loss"] = token_labels_loss(out["logits"], labels.at("labels"));
  return out;
}

}  // namespace xg::models
