// BERT's building blocks: embeddings, pooler and the prediction heads.
#include "models/bert/bert.hpp"

namespace xg::models {

BertEmbeddings::BertEmbeddings(const BertConfig& c, int64_t position_padding_idx) : dropout_p(c.hidden_dropout_prob) {
  word_embeddings = register_module("word_embeddings", std::make_shared<nn::Embedding>(c.vocab_size, c.hidden_size, c.pad_token_id));
  position_embeddings = register_module("position_embeddings", std::make_shared<nn::Embedding>(c.max_position_embeddings, c.hidden_size, position_padding_idx));
  token_type_embeddings = register_module("token_type_embeddings", std::make_shared<nn::Embedding>(c.type_vocab_size, c.hidden_size));
  layer_norm = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(c.hidden_size, c.layer_norm_eps));
}

Tensor BertEmbeddings::default_position_ids(const ModelInputs& in) const {
  Tensor positions = Tensor::empty(in.input_ids.shape(), Dtype::Int64);
  int64_t* p = positions.data_as<int64_t>();
  const size_t T = in.seq_len();
  for (size_t i = 0; i < positions.numel(); ++i) p[i] = int64_t(i % T);
  return positions;
}

Tensor BertEmbeddings::forward(const ModelInputs& in) {
  const Tensor positions = in.position_ids.defined() ? in.position_ids : default_position_ids(in);
  Tensor types = in.token_type_ids;
  if (!types.defined()) types = Tensor::from_ints(std::vector<int64_t>(in.input_ids.numel(), 0), in.input_ids.shape());
  Tensor h = add(add(word_embeddings->forward(in.input_ids), position_embeddings->forward(positions)),
                 token_type_embeddings->forward(types));
  return dropout(layer_norm->forward(h), dropout_p, is_training());
}

BertPooler::BertPooler(const BertConfig& c) {
  dense = register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
}

Tensor BertPooler::forward(const Tensor& hidden) {
  const Tensor cls = reshape(slice(hidden, 1, 0, 1), {long(hidden.size(0)), long(hidden.size(2))});
  return tanh(dense->forward(cls));
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

Tensor BertLMHead::forward_sequence(const Tensor& hidden) {
  const long B = long(hidden.size(0)), T = long(hidden.size(1));
  return reshape(forward(reshape(hidden, {B * T, -1})), {B, T, -1});
}

BertPreTrainingHeads::BertPreTrainingHeads(const BertConfig& c, Tensor tied) {
  predictions = register_module("predictions", std::make_shared<BertLMHead>(c, std::move(tied)));
  seq_relationship = register_module("seq_relationship", std::make_shared<nn::Linear>(c.hidden_size, 2));
}

BertOnlyMLMHead::BertOnlyMLMHead(const BertConfig& c, Tensor tied) {
  predictions = register_module("predictions", std::make_shared<BertLMHead>(c, std::move(tied)));
}

}  // namespace xg::models
