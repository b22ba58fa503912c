#include "models/bert.hpp"

#include <fmt/format.h>

namespace xg::models {

void BertInputs::validate(const BertConfig& c) const {
  const size_t n = batch * seq_len;
  if (batch == 0 || seq_len == 0) throw std::invalid_argument(fmt::format("[bert] empty batch ({} x {})", batch, seq_len));
  if (seq_len > c.max_position_embeddings)
    throw std::invalid_argument(fmt::format("[bert] sequence length {} exceeds max_position_embeddings {}", seq_len,
                                            c.max_position_embeddings));
  if (input_ids.size() != n)
    throw std::invalid_argument(fmt::format("[bert] {} input_ids for a {} x {} batch", input_ids.size(), batch, seq_len));
  if (!token_type_ids.empty() && token_type_ids.size() != n)
    throw std::invalid_argument(fmt::format("[bert] {} token_type_ids for a {} x {} batch", token_type_ids.size(), batch, seq_len));
  if (attention_mask.defined() && attention_mask.shape() != Shape{batch, seq_len})
    throw std::invalid_argument(fmt::format("[bert] attention_mask has shape {}, expected [{}, {}]",
                                            shape_str(attention_mask.shape()), batch, seq_len));
  for (size_t i = 0; i < n; ++i) {
    if (input_ids[i] < 0 || size_t(input_ids[i]) >= c.vocab_size)
      throw std::out_of_range(fmt::format("[bert] input id {} at position {} is outside the vocabulary of {}", input_ids[i],
                                          i, c.vocab_size));
    if (!token_type_ids.empty() && (token_type_ids[i] < 0 || size_t(token_type_ids[i]) >= c.type_vocab_size))
      throw std::out_of_range(fmt::format("[bert] token type {} at position {} is outside type_vocab_size {}",
                                          token_type_ids[i], i, c.type_vocab_size));
  }
}

BertEmbeddings::BertEmbeddings(const BertConfig& c) : dropout_p(c.hidden_dropout_prob) {
  word_embeddings = register_module("word_embeddings", std::make_shared<nn::Embedding>(c.vocab_size, c.hidden_size, c.pad_token_id));
  position_embeddings = register_module("position_embeddings", std::make_shared<nn::Embedding>(c.max_position_embeddings, c.hidden_size));
  token_type_embeddings = register_module("token_type_embeddings", std::make_shared<nn::Embedding>(c.type_vocab_size, c.hidden_size));
  layer_norm = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
}

Tensor BertEmbeddings::forward(const BertInputs& in) {
  const Shape bt{in.batch, in.seq_len};
  std::vector<int64_t> positions(in.batch * in.seq_len), types = in.token_type_ids;
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = int64_t(i % in.seq_len);
  if (types.empty()) types.assign(positions.size(), 0);
  Tensor h = add(add(word_embeddings->forward(in.input_ids, bt), position_embeddings->forward(positions, bt)),
                 token_type_embeddings->forward(types, bt));
  return dropout(layer_norm->forward(h), dropout_p, is_training());
}

BertPooler::BertPooler(const BertConfig& c) {
  dense = register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
}

Tensor BertPooler::forward(const Tensor& hidden) {
  const Tensor cls = reshape(slice(hidden, 1, 0, 1), {long(hidden.size(0)), long(hidden.size(2))});
  return tanh(dense->forward(cls));
}

BertModel::BertModel(const BertConfig& c) : config(c) {
  c.validate();
  embeddings = register_module("embeddings", std::make_shared<BertEmbeddings>(c));
  encoder = register_module("encoder", std::make_shared<nn::Encoder>(c.transformer_options(), c.num_hidden_layers));
  pooler = register_module("pooler", std::make_shared<BertPooler>(c));
}

BertModel::Output BertModel::forward(const BertInputs& in) {
  in.validate(config);
  const Tensor mask = in.attention_mask.defined() ? nn::additive_attention_mask(in.attention_mask) : Tensor();
  Output out;
  out.last_hidden_state = encoder->forward(embeddings->forward(in), mask);
  out.pooler_output = pooler->forward(out.last_hidden_state);
  return out;
}

namespace {
// A named holder so the transform's parameters sit under "transform.".
struct Transform : nn::Module {
  using nn::Module::register_module;
};
}  // namespace

BertLMHead::BertLMHead(const BertConfig& c, Tensor tied) : decoder_weight(std::move(tied)), act(nn::activation_from_name(c.hidden_act)) {
  auto t = std::make_shared<Transform>();
  transform_dense = t->register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
  transform_norm = t->register_module("LayerNorm", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
  transform = register_module("transform", std::shared_ptr<nn::Module>(t));
  bias = register_parameter("bias", Tensor::zeros({c.vocab_size}));
}

Tensor BertLMHead::forward(const Tensor& rows) {
  const Tensor h = transform_norm->forward(nn::activate(transform_dense->forward(rows), act));
  return linear(h, decoder_weight, bias);  // the decoder is the tied word embeddings
}

BertPreTrainingHeads::BertPreTrainingHeads(const BertConfig& c, Tensor tied) {
  predictions = register_module("predictions", std::make_shared<BertLMHead>(c, std::move(tied)));
  seq_relationship = register_module("seq_relationship", std::make_shared<nn::Linear>(c.hidden_size, 2));
}

BertForPreTraining::BertForPreTraining(const BertConfig& c) : config(c) {
  bert = register_module("bert", std::make_shared<BertModel>(c));
  cls = register_module("cls", std::make_shared<BertPreTrainingHeads>(c, bert->embeddings->word_embeddings->weight));
}

void BertForPreTraining::init_weights(Generator& gen) {
  nn::init::bert_init(*this, config.initializer_range, gen);
  nn::init::zeros_(cls->predictions->bias);
}

namespace {
size_t count_correct(const Tensor& logits, const std::vector<int64_t>& labels) {
  const size_t C = logits.size(-1);
  size_t correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const float* row = logits.data() + i * C;
    correct += int64_t(std::max_element(row, row + C) - row) == labels[i];
  }
  return correct;
}
}  // namespace

BertForPreTraining::Output BertForPreTraining::forward(const BertInputs& in, const PretrainingTargets& t) {
  const size_t n = in.batch * in.seq_len;
  if (t.masked_positions.size() != t.masked_labels.size())
    throw std::invalid_argument(fmt::format("[bert] {} masked positions but {} labels", t.masked_positions.size(), t.masked_labels.size()));
  if (t.next_sentence_labels.size() != in.batch)
    throw std::invalid_argument(fmt::format("[bert] {} next-sentence labels for a batch of {}", t.next_sentence_labels.size(), in.batch));
  for (int64_t p : t.masked_positions)
    if (p < 0 || size_t(p) >= n) throw std::out_of_range(fmt::format("[bert] masked position {} outside the {} tokens", p, n));
  const auto base = bert->forward(in);
  Output out;
  const Tensor rows = index_select(reshape(base.last_hidden_state, {long(n), -1}), 0, t.masked_positions);
  out.mlm_logits = cls->predictions->forward(rows);
  out.nsp_logits = cls->seq_relationship->forward(base.pooler_output);
  out.mlm_loss = cross_entropy(out.mlm_logits, t.masked_labels);
  out.nsp_loss = cross_entropy(out.nsp_logits, t.next_sentence_labels);
  out.loss = add(out.mlm_loss, out.nsp_loss);
  out.mlm_correct = count_correct(out.mlm_logits, t.masked_labels);
  out.nsp_correct = count_correct(out.nsp_logits, t.next_sentence_labels);
  return out;
}

BertForPreTraining::FullOutput BertForPreTraining::forward_full(const BertInputs& in) {
  FullOutput out;
  out.base = bert->forward(in);
  const long B = long(in.batch), T = long(in.seq_len);
  const Tensor logits = cls->predictions->forward(reshape(out.base.last_hidden_state, {B * T, -1}));
  out.prediction_logits = reshape(logits, {B, T, -1});
  out.seq_relationship_logits = cls->seq_relationship->forward(out.base.pooler_output);
  return out;
}

}  // namespace xg::models
