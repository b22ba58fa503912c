// The registered BERT models: BertModel, BertForPreTraining, BertForMaskedLM.
#include "models/bert.hpp"

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

BertModel::Output BertModel::forward(const ModelInputs& in) {
  InputLimits limits = config.input_limits();
  limits.first_position = embeddings->first_position();
  in.validate(limits);
  const Tensor mask = in.attention_mask.defined() ? nn::additive_attention_mask(in.attention_mask) : Tensor();
  Output out;
  out.last_hidden_state = encoder->forward(embeddings->forward(in), mask);
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

namespace {
size_t count_correct(const Tensor& logits, const Tensor& label_tensor) {
  const size_t C = logits.size(-1);
  const int64_t* labels = label_tensor.data_as<int64_t>();
  size_t correct = 0;
  for (size_t i = 0; i < label_tensor.numel(); ++i) {
    const float* row = logits.data() + i * C;
    correct += int64_t(std::max_element(row, row + C) - row) == labels[i];
  }
  return correct;
}
}  // namespace

PretrainingTargets make_pretraining_targets(const std::vector<int64_t>& masked_positions,
                                            const std::vector<int64_t>& masked_labels,
                                            const std::vector<int64_t>& next_sentence_labels) {
  return {Tensor::from_ints(masked_positions, {masked_positions.size()}),
          Tensor::from_ints(masked_labels, {masked_labels.size()}),
          Tensor::from_ints(next_sentence_labels, {next_sentence_labels.size()})};
}

BertForPreTraining::Output BertForPreTraining::forward(const ModelInputs& in, const PretrainingTargets& t) {
  const size_t n = in.batch() * in.seq_len();
  for (const auto& [name, tensor] : {std::pair{"masked_positions", &t.masked_positions}, {"masked_labels", &t.masked_labels},
                                     {"next_sentence_labels", &t.next_sentence_labels}})
    if (!tensor->defined() || tensor->dtype() != Dtype::Int64 || tensor->dim() != 1)
      throw std::invalid_argument(fmt::format("[bert] {} must be a 1-D int64 tensor", name));
  if (t.masked_positions.numel() != t.masked_labels.numel())
    throw std::invalid_argument(fmt::format("[bert] {} masked positions but {} labels", t.masked_positions.numel(), t.masked_labels.numel()));
  if (t.next_sentence_labels.numel() != in.batch())
    throw std::invalid_argument(fmt::format("[bert] {} next-sentence labels for a batch of {}", t.next_sentence_labels.numel(), in.batch()));
  const std::vector<int64_t> positions = t.masked_positions.to_ints();
  for (int64_t p : positions)
    if (p < 0 || size_t(p) >= n) throw std::out_of_range(fmt::format("[bert] masked position {} outside the {} tokens", p, n));
  const auto base = bert->forward(in);
  Output out;
  const Tensor rows = index_select(reshape(base.last_hidden_state, {long(n), -1}), 0, positions);
  out.mlm_logits = cls->predictions->forward(rows);
  out.nsp_logits = cls->seq_relationship->forward(base.pooler_output);
  out.mlm_loss = cross_entropy(out.mlm_logits, t.masked_labels);
  out.nsp_loss = cross_entropy(out.nsp_logits, t.next_sentence_labels);
  out.loss = add(out.mlm_loss, out.nsp_loss);
  out.mlm_correct = count_correct(out.mlm_logits, t.masked_labels);
  out.nsp_correct = count_correct(out.nsp_logits, t.next_sentence_labels);
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
