// The registered ALBERT models: AlbertModel, AlbertForPreTraining, AlbertForMaskedLM.
#include "models/albert/albert.hpp"

#include <fmt/format.h>

#include "nn/fused_encoder.hpp"

namespace xg::models {

AlbertAttention::AlbertAttention(const nn::TransformerOptions& opt) : nn::SelfAttention(opt), output_dropout(opt.hidden_dropout) {
  dense = register_module("dense", std::make_shared<nn::Linear>(opt.hidden_size, opt.hidden_size));
  layer_norm = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(opt.hidden_size, opt.layer_norm_eps));
}

Tensor AlbertAttention::forward(const Tensor& x, const nn::AttentionMask& mask) {
  return project(x, nn::SelfAttention::forward(x, mask));
}

Tensor AlbertAttention::forward_rows(const Tensor& x, const Tensor& mask, const nn::OutputRows& rows) {
  const Tensor xs = rows.select(x);
  return project(xs, forward_queries(xs, x, mask));
}

Tensor AlbertAttention::project(const Tensor& x, const Tensor& context) {
  return layer_norm->forward(add(x, dropout(dense->forward(context), output_dropout, is_training())));
}

AlbertLayer::AlbertLayer(const nn::TransformerOptions& opt) : act(opt.activation) {
  full_layer_layer_norm = register_module("full_layer_layer_norm", std::make_shared<nn::LayerNorm>(opt.hidden_size, opt.layer_norm_eps));
  attention = register_module("attention", std::make_shared<AlbertAttention>(opt));
  ffn = register_module("ffn", std::make_shared<nn::Linear>(opt.hidden_size, opt.intermediate_size));
  ffn_output = register_module("ffn_output", std::make_shared<nn::Linear>(opt.intermediate_size, opt.hidden_size));
}

Tensor AlbertLayer::forward(const Tensor& x, const nn::AttentionMask& mask) { return feed_forward(attention->forward(x, mask)); }

Tensor AlbertLayer::forward_rows(const Tensor& x, const Tensor& mask, const nn::OutputRows& rows) {
  return feed_forward(attention->forward_rows(x, mask, rows));
}

// transformers applies no dropout to the feed-forward output here.
Tensor AlbertLayer::feed_forward(const Tensor& a) {
  return full_layer_layer_norm->forward(add(ffn_output->forward(nn::activate(ffn->forward(a), act)), a));
}

AlbertLayerGroup::AlbertLayerGroup(const nn::TransformerOptions& opt, size_t inner_group_num) {
  albert_layers = register_module("albert_layers", std::make_shared<nn::ModuleList<AlbertLayer>>());
  for (size_t i = 0; i < inner_group_num; ++i) albert_layers->push_back(std::make_shared<AlbertLayer>(opt));
}

Tensor AlbertLayerGroup::forward(const Tensor& x, const nn::AttentionMask& mask) {
  Tensor h = x;
  for (auto& layer : *albert_layers) h = layer->forward(h, mask);
  return h;
}

Tensor AlbertLayerGroup::forward_rows(const Tensor& x, const Tensor& mask, const nn::OutputRows& rows) {
  if (albert_layers->size() == 0) return rows.select(x);
  Tensor h = x;
  const nn::AttentionMask m(mask);
  for (size_t i = 0; i + 1 < albert_layers->size(); ++i) h = (*albert_layers)[i].forward(h, m);
  return (*albert_layers)[albert_layers->size() - 1].forward_rows(h, mask, rows);
}

AlbertTransformer::AlbertTransformer(const AlbertConfig& c) : num_hidden_layers(c.num_hidden_layers) {
  embedding_hidden_mapping_in = register_module("embedding_hidden_mapping_in", std::make_shared<nn::Linear>(c.embedding_size, c.hidden_size));
  albert_layer_groups = register_module("albert_layer_groups", std::make_shared<nn::ModuleList<AlbertLayerGroup>>());
  for (size_t g = 0; g < c.num_hidden_groups; ++g)
    albert_layer_groups->push_back(std::make_shared<AlbertLayerGroup>(c.transformer_options(), c.inner_group_num));
}

// In double, as Python divides: the integer i * groups / layers rounds otherwise at some
// boundaries (18 layers in 14 groups: layer 9 is group 6, not 7).
size_t AlbertTransformer::group_of_layer(size_t i) const {
  const double layers_per_group = double(num_hidden_layers) / double(albert_layer_groups->size());
  return std::min(size_t(double(i) / layers_per_group), albert_layer_groups->size() - 1);
}

// Every layer as it runs, shared weights and all, as the fused inference path sees them.
std::vector<nn::FusedLayerView> AlbertTransformer::fused_views() const {
  std::vector<nn::FusedLayerView> views;
  for (size_t i = 0; i < num_hidden_layers; ++i)
    for (auto& l : *(*albert_layer_groups)[group_of_layer(i)].albert_layers) {
      nn::FusedLayerView v;
      v.attention = l->attention.get();
      v.attention_out = l->attention->dense.get();
      v.attention_norm = l->attention->layer_norm.get();
      v.up = l->ffn.get();
      v.act = l->act;
      v.down = l->ffn_output.get();
      v.output_norm = l->full_layer_layer_norm.get();
      views.push_back(v);
    }
  return views;
}

Tensor AlbertTransformer::forward(const Tensor& embedded, const Tensor& mask) {
  Tensor h = embedding_hidden_mapping_in->forward(embedded);
  if (nn::use_fused_inference(*this, mask)) return nn::fused_encoder_forward(fused_views(), nullptr, h, mask);
  return nn::forward_without_padding(execution(), h, mask, [&](const Tensor& in, const nn::AttentionMask& m) {
    Tensor x = in;
    for (size_t i = 0; i < num_hidden_layers; ++i) {
      AlbertLayerGroup* group = &(*albert_layer_groups)[group_of_layer(i)];
      x = run_group(*group, x, [group, m](const Tensor& v) { return group->forward(v, m); });
    }
    return x;
  });
}

Tensor AlbertTransformer::forward_rows(const Tensor& embedded, const Tensor& mask, const nn::OutputRows& rows) {
  AlbertLayerGroup* last =
      num_hidden_layers > 0 ? &(*albert_layer_groups)[group_of_layer(num_hidden_layers - 1)] : nullptr;
  const size_t inner = last ? last->albert_layers->size() : 0;
  const AlbertLayer* last_layer = inner > 0 ? &(*last->albert_layers)[inner - 1] : nullptr;
  nn::LastLayerShape shape{};
  if (last_layer) shape = {last_layer->attention->num_heads, last_layer->ffn->weight.size(1), last_layer->ffn->weight.size(0)};
  switch (nn::rows_path(execution(), nn::use_fused_inference(*this, mask), embedded, mask, rows, last_layer ? &shape : nullptr)) {
    case nn::RowsPath::FusedAtRows:
      return nn::fused_encoder_forward(fused_views(), nullptr, embedding_hidden_mapping_in->forward(embedded), mask, &rows);
    case nn::RowsPath::SelectFromAll: return rows.select(forward(embedded, mask));
    case nn::RowsPath::SparseLastLayer: break;
  }
  Tensor x = embedding_hidden_mapping_in->forward(embedded);
  const nn::AttentionMask m(mask);
  for (size_t i = 0; i + 1 < num_hidden_layers; ++i) {
    AlbertLayerGroup* group = &(*albert_layer_groups)[group_of_layer(i)];
    x = run_group(*group, x, [group, m](const Tensor& v) { return group->forward(v, m); });
  }
  return run_group(*last, x, [last, mask, rows](const Tensor& v) { return last->forward_rows(v, mask, rows); });
}

// group_forward is kept for the recomputation: what it captures, it holds by value.
Tensor AlbertTransformer::run_group(AlbertLayerGroup& g, const Tensor& h,
                                    const std::function<Tensor(const Tensor&)>& group_forward) {
  if (!(checkpoint_activations && is_training() && grad_enabled())) return group_forward(h);
  return checkpoint([group_forward](const std::vector<Tensor>& v) { return group_forward(v[0]); }, {h}, g.parameters());
}

AlbertPreTrainedModel::AlbertPreTrainedModel(const AlbertConfig& c, std::string base_prefix)
    : config(c), base_prefix_(std::move(base_prefix)) {
  c.validate();
}

void AlbertPreTrainedModel::init_weights(Generator& gen) {
  nn::init::bert_init(*this, config.initializer_range, gen);
  apply([](nn::Module& m) {
    if (auto* head = dynamic_cast<AlbertMLMHead*>(&m)) nn::init::zeros_(head->bias);
  });
}

std::string AlbertPreTrainedModel::name_from_checkpoint(const std::string& file_name) const {
  std::string n = file_name;
  if (n.rfind("albert.", 0) == 0) n = n.substr(7);
  // Buffers and the decoder tied to the word embeddings (its bias is predictions.bias).
  if (n == "embeddings.position_ids" || n == "embeddings.token_type_ids" || n == "predictions.decoder.weight" ||
      n == "predictions.decoder.bias")
    return "";
  for (const char* head : {"predictions.", "sop_classifier.", "classifier.", "qa_outputs."})  // heads sit beside "albert."
    if (n.rfind(head, 0) == 0) return n;
  return base_prefix_ + n;
}

bool AlbertPreTrainedModel::is_head_tensor(const std::string& name) const {
  for (const char* head : {"predictions.", "sop_classifier.", "pooler.", "albert.pooler.", "classifier.", "qa_outputs."})
    if (name.rfind(head, 0) == 0) return true;
  return false;
}

AlbertModel::AlbertModel(const AlbertConfig& c, bool add_pooling_layer) : AlbertPreTrainedModel(c, "") {
  embeddings = register_module("embeddings", std::make_shared<BertEmbeddings>(c.embedding_config()));
  encoder = register_module("encoder", std::make_shared<AlbertTransformer>(c));
  if (add_pooling_layer) pooler = register_module("pooler", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
}

void AlbertModel::share_encoder_of(PretrainedModel& other) { share_embeddings_and_encoder<AlbertModel>(other); }

AlbertModel::Output AlbertModel::forward(const ModelInputs& in) { return run(in, nullptr); }
AlbertModel::Output AlbertModel::forward(const ModelInputs& in, const nn::OutputRows& rows) { return run(in, &rows); }

AlbertModel::Output AlbertModel::forward_first_tokens(const ModelInputs& in) { return run(in, nullptr, true); }

AlbertModel::Output AlbertModel::run(const ModelInputs& in, const nn::OutputRows* rows, bool first_tokens) {
  in.validate(config.input_limits());
  const nn::OutputRows firsts = first_tokens ? nn::OutputRows::first_tokens(in.batch(), in.seq_len()) : nn::OutputRows();
  if (first_tokens) rows = &firsts;
  if (rows && pooler) rows->require_first_positions(in.seq_len(), kArchitecture);  // the pooler's rows
  const Tensor mask = in.attention_mask.defined() ? nn::additive_attention_mask(in.attention_mask) : Tensor();
  const Tensor embedded = embeddings->forward(in);
  Output out;
  out.last_hidden_state = rows ? encoder->forward_rows(embedded, mask, *rows) : encoder->forward(embedded, mask);
  if (pooler) {
    const Tensor& h = out.last_hidden_state;
    out.pooler_output = tanh(pooler->forward(reshape(slice(h, 1, 0, 1), {long(h.size(0)), long(h.size(2))})));
  }
  return out;
}

NamedOutputs AlbertModel::forward_named(const ModelInputs& in, const Labels& labels) {
  check_label_names(labels, {}, kArchitecture);
  const Output o = forward(in);
  NamedOutputs out{{"last_hidden_state", o.last_hidden_state}};
  if (o.pooler_output.defined()) out["pooler_output"] = o.pooler_output;
  return out;
}

AlbertMLMHead::AlbertMLMHead(const AlbertConfig& c, Tensor tied)
    : decoder_weight(std::move(tied)), act(nn::activation_from_name(c.hidden_act)) {
  layer_norm = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(c.embedding_size, c.layer_norm_eps));
  bias = register_parameter("bias", Tensor::zeros({c.vocab_size}));
  dense = register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.embedding_size));
}

Tensor AlbertMLMHead::forward(const Tensor& hidden) {
  const long B = long(hidden.size(0)), T = long(hidden.size(1));
  const Tensor h = layer_norm->forward(nn::activate(dense->forward(reshape(hidden, {B * T, -1})), act));
  return reshape(linear(h, decoder_weight, bias), {B, T, -1});
}

AlbertSOPHead::AlbertSOPHead(const AlbertConfig& c) : dropout_p(c.classifier_dropout_prob) {
  classifier = register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, 2));
}

Tensor AlbertSOPHead::forward(const Tensor& pooled) { return classifier->forward(dropout(pooled, dropout_p, is_training())); }

AlbertForPreTraining::AlbertForPreTraining(const AlbertConfig& c) : AlbertPreTrainedModel(c, "albert.") {
  albert = register_module("albert", std::make_shared<AlbertModel>(c));
  predictions = register_module("predictions", std::make_shared<AlbertMLMHead>(c, albert->embeddings->word_embeddings->weight));
  sop_classifier = register_module("sop_classifier", std::make_shared<AlbertSOPHead>(c));
}

NamedOutputs AlbertForPreTraining::forward_named(const ModelInputs& in, const Labels& labels) {
  check_label_names(labels, {"labels", "sentence_order_label"}, kArchitecture);
  if (labels.size() == 1)
    throw std::invalid_argument(fmt::format("[{}] the loss needs both labels and sentence_order_label", kArchitecture));
  const AlbertModel::Output base = albert->forward(in);
  NamedOutputs out{{"last_hidden_state", base.last_hidden_state},
                   {"pooler_output", base.pooler_output},
                   {"prediction_logits", predictions->forward(base.last_hidden_state)},
                   {"sop_logits", sop_classifier->forward(base.pooler_output)}};
  if (labels.empty()) return out;
  out["mlm_loss"] = token_labels_loss(out["prediction_logits"], labels.at("labels"));
  out["sop_loss"] = sequence_labels_loss(out["sop_logits"], labels.at("sentence_order_label"), "sentence_order_label");
  out["loss"] = add(out["mlm_loss"], out["sop_loss"]);
  return out;
}

PretrainingOutput AlbertForPreTraining::forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) {
  check_pretraining_targets(in, t, SentenceTask::SentenceOrder, kArchitecture);
  const PretrainingRows rows = pretraining_rows(in, t);
  const AlbertModel::Output base = albert->forward(in, rows.rows);
  PretrainingOutput out;
  masked_lm_loss(base.last_hidden_state, rows.masked, t, [&](const Tensor& h) { return predictions->forward(h); }, out);
  add_sentence_loss(sop_classifier->forward(base.pooler_output), t, out);
  return out;
}

AlbertForMaskedLM::AlbertForMaskedLM(const AlbertConfig& c) : AlbertPreTrainedModel(c, "albert.") {
  albert = register_module("albert", std::make_shared<AlbertModel>(c, /*add_pooling_layer=*/false));
  predictions = register_module("predictions", std::make_shared<AlbertMLMHead>(c, albert->embeddings->word_embeddings->weight));
}

NamedOutputs AlbertForMaskedLM::forward_named(const ModelInputs& in, const Labels& labels) {
  check_label_names(labels, {"labels"}, kArchitecture);
  const Tensor hidden = albert->forward(in).last_hidden_state;
  NamedOutputs out{{"last_hidden_state", hidden}, {"logits", predictions->forward(hidden)}};
  if (labels.count("labels")) out["loss"] = token_labels_loss(out["logits"], labels.at("labels"));
  return out;
}

PretrainingOutput AlbertForMaskedLM::forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) {
  check_pretraining_targets(in, t, SentenceTask::None, kArchitecture);
  const PretrainingRows rows = pretraining_rows(in, t);
  PretrainingOutput out;
  masked_lm_loss(albert->forward(in, rows.rows).last_hidden_state, rows.masked, t,
                 [&](const Tensor& h) { return predictions->forward(h); }, out);
  return out;
}

}  // namespace xg::models
