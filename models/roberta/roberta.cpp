// The registered RoBERTa models: RobertaModel and RobertaForMaskedLM.
#include "models/roberta/roberta.hpp"

namespace xg::models {

RobertaEmbeddings::RobertaEmbeddings(const RobertaConfig& c) : BertEmbeddings(c, c.pad_token_id), padding_idx(c.pad_token_id) {}

Tensor RobertaEmbeddings::default_position_ids(const ModelInputs& in) const {
  Tensor positions = Tensor::empty(in.input_ids.shape(), Dtype::Int64);
  const int64_t* ids = in.input_ids.data_as<int64_t>();
  int64_t* p = positions.data_as<int64_t>();
  const size_t T = in.seq_len();
  for (size_t b = 0; b < in.batch(); ++b) {
    int64_t count = 0;
    for (size_t t = 0; t < T; ++t) {
      const size_t i = b * T + t;
      p[i] = ids[i] == padding_idx ? padding_idx : padding_idx + ++count;
    }
  }
  return positions;
}

std::string roberta_name_from_checkpoint(const std::string& file_name, bool has_prefix) {
  std::string n = file_name;
  if (n.rfind("roberta.", 0) == 0) n = n.substr(8);
  // Buffers and the decoder tied to the word embeddings (its bias is lm_head.bias).
  if (n == "embeddings.position_ids" || n == "embeddings.token_type_ids" || n == "lm_head.decoder.weight" ||
      n == "lm_head.decoder.bias")
    return "";
  for (const char* head : {"lm_head.", "classifier.", "qa_outputs."})  // heads sit beside "roberta."
    if (n.rfind(head, 0) == 0) return n;
  return has_prefix ? "roberta." + n : n;
}

bool is_roberta_head_tensor(const std::string& name) {
  for (const char* head : {"lm_head.", "pooler.", "roberta.pooler.", "classifier.", "qa_outputs."})
    if (name.rfind(head, 0) == 0) return true;
  return false;
}

namespace {
// RoBERTa's own checks run before any module is built from the config.
const RobertaConfig& validated(const RobertaConfig& c) {
  c.validate();
  return c;
}
}  // namespace

RobertaModel::RobertaModel(const RobertaConfig& c, bool add_pooling_layer)
    : BertModel(c, add_pooling_layer, std::make_shared<RobertaEmbeddings>(validated(c))), roberta_config(c) {}

RobertaLMHead::RobertaLMHead(const RobertaConfig& c, Tensor tied) : decoder_weight(std::move(tied)) {
  dense = register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
  layer_norm = register_module("layer_norm", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
  bias = register_parameter("bias", Tensor::zeros({c.vocab_size}));
}

Tensor RobertaLMHead::forward(const Tensor& hidden) {
  const long B = long(hidden.size(0)), T = long(hidden.size(1));
  // transformers' RobertaLMHead applies exact GELU whatever the config's hidden_act.
  const Tensor h = layer_norm->forward(gelu(dense->forward(reshape(hidden, {B * T, -1}))));
  return reshape(linear(h, decoder_weight, bias), {B, T, -1});
}

RobertaForMaskedLM::RobertaForMaskedLM(const RobertaConfig& c) : BertPreTrainedModel(c, "roberta.") {
  roberta = register_module("roberta", std::make_shared<RobertaModel>(c, /*add_pooling_layer=*/false));
  lm_head = register_module("lm_head", std::make_shared<RobertaLMHead>(c, roberta->embeddings->word_embeddings->weight));
}

void RobertaForMaskedLM::init_weights(Generator& gen) {
  BertPreTrainedModel::init_weights(gen);
  nn::init::zeros_(lm_head->bias);
}

Tensor RobertaForMaskedLM::forward(const ModelInputs& in) { return lm_head->forward(roberta->forward(in).last_hidden_state); }

PretrainingOutput RobertaForMaskedLM::forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) {
  check_pretraining_targets(in, t, SentenceTask::None, kArchitecture);
  const PretrainingRows rows = pretraining_rows(in, t);
  PretrainingOutput out;
  masked_lm_loss(roberta->forward(in, rows.rows).last_hidden_state, rows.masked, t,
                 [&](const Tensor& h) { return lm_head->forward(h); }, out);
  return out;
}

NamedOutputs RobertaForMaskedLM::forward_named(const ModelInputs& in, const Labels& labels) {
  check_label_names(labels, {"labels"}, kArchitecture);
  const Tensor hidden = roberta->forward(in).last_hidden_state;
  NamedOutputs out{{"last_hidden_state", hidden}, {"logits", lm_head->forward(hidden)}};
  if (labels.count("labels")) out["loss"] = token_labels_loss(out["logits"], labels.at("labels"));
  return out;
}

}  // namespace xg::models
