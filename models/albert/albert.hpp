#pragma once
// ALBERT (Lan et al. 2019): BERT with a factorised embedding (vocabulary rows of width
// embedding_size, projected to the hidden width) and layers shared across depth
// (num_hidden_layers applications of num_hidden_groups groups of inner_group_num layers), with
// sentence-order prediction instead of next-sentence prediction. Hugging Face's module tree and
// names: albert.embeddings..., albert.encoder.embedding_hidden_mapping_in,
// albert.encoder.albert_layer_groups.G.albert_layers.I.{attention.{query,key,value,dense,LayerNorm},
// ffn, ffn_output, full_layer_layer_norm}, albert.pooler, predictions.{dense,LayerNorm,bias} (the
// decoder tied to the word embeddings), sop_classifier.classifier.
#include <memory>

#include "models/bert/bert.hpp"
#include "models/albert/albert_config.hpp"
#include "models/core/pretraining.hpp"
#include "nn/fused_encoder.hpp"

namespace xg::models {

// Self-attention plus its output projection and post-LN: LayerNorm(x + dropout(dense(context))).
class AlbertAttention : public nn::SelfAttention {
 public:
  explicit AlbertAttention(const nn::TransformerOptions& opt);
  Tensor forward(const Tensor& x, const nn::AttentionMask& mask);
  // forward(x, mask) at `rows` only (nn::OutputRows); mask additive (B, T) or undefined.
  Tensor forward_rows(const Tensor& x, const Tensor& mask, const nn::OutputRows& rows);
  std::shared_ptr<nn::Linear> dense;
  std::shared_ptr<nn::LayerNorm> layer_norm;  // "LayerNorm"
  float output_dropout;

 private:
  Tensor project(const Tensor& x, const Tensor& context);  // LayerNorm(x + dropout(dense(context)))
};

class AlbertLayer : public nn::Module {
 public:
  explicit AlbertLayer(const nn::TransformerOptions& opt);
  // full_layer_layer_norm(ffn_output(act(ffn(a))) + a), a = attention(x)
  Tensor forward(const Tensor& x, const nn::AttentionMask& mask);
  Tensor forward_rows(const Tensor& x, const Tensor& mask, const nn::OutputRows& rows);
  std::shared_ptr<nn::LayerNorm> full_layer_layer_norm;
  std::shared_ptr<AlbertAttention> attention;
  std::shared_ptr<nn::Linear> ffn, ffn_output;
  nn::Activation act;

 private:
  Tensor feed_forward(const Tensor& a);
};

class AlbertLayerGroup : public nn::Module {
 public:
  AlbertLayerGroup(const nn::TransformerOptions& opt, size_t inner_group_num);
  Tensor forward(const Tensor& x, const nn::AttentionMask& mask);
  // The group's last layer at `rows` only.
  Tensor forward_rows(const Tensor& x, const Tensor& mask, const nn::OutputRows& rows);
  std::shared_ptr<nn::ModuleList<AlbertLayer>> albert_layers;
};

// embedding_hidden_mapping_in, then layer i runs group group_of_layer(i).
class AlbertTransformer : public nn::Module {
 public:
  explicit AlbertTransformer(const AlbertConfig& c);
  Tensor forward(const Tensor& embedded, const Tensor& mask);
  // forward at `rows` only, the last layer computed there alone (as nn::Encoder::forward_rows).
  Tensor forward_rows(const Tensor& embedded, const Tensor& mask, const nn::OutputRows& rows);
  // transformers' group index of layer i: int(i / (num_hidden_layers / num_hidden_groups)).
  size_t group_of_layer(size_t i) const;
  std::shared_ptr<nn::Linear> embedding_hidden_mapping_in;
  std::shared_ptr<nn::ModuleList<AlbertLayerGroup>> albert_layer_groups;
  size_t num_hidden_layers;
  // Training keeps only each layer's input and recomputes the layer in the backward pass.
  bool checkpoint_activations = false;

 private:
  // group_forward(h) for group g, recomputed in the backward under checkpoint_activations.
  Tensor run_group(AlbertLayerGroup& g, const Tensor& h, const std::function<Tensor(const Tensor&)>& group_forward);
  std::vector<nn::FusedLayerView> fused_views() const;
};

// What every ALBERT model shares: the config, the initialisation and the name map. Heads hold
// the encoder under "albert."; AlbertModel itself has no prefix.
class AlbertPreTrainedModel : public PretrainedModel {
 public:
  AlbertPreTrainedModel(const AlbertConfig& c, std::string base_prefix);
  std::string model_type() const override { return AlbertConfig::kModelType; }
  nlohmann::json family_config_json() const override { return config.to_json(); }
  void init_weights(Generator& gen) override;
  std::string name_from_checkpoint(const std::string& file_name) const override;
  bool is_head_tensor(const std::string& name) const override;
  AlbertConfig config;

 private:
  std::string base_prefix_;
};

class AlbertModel : public AlbertPreTrainedModel {
 public:
  static constexpr const char* kArchitecture = "AlbertModel";
  explicit AlbertModel(const AlbertConfig& c, bool add_pooling_layer = true);
  std::string architecture() const override { return kArchitecture; }
  struct Output {
    Tensor last_hidden_state;  // (B, T, H)
    Tensor pooler_output;      // (B, H); undefined without a pooling layer
  };
  Output forward(const ModelInputs& in);
  // last_hidden_state at `rows` only, as BertModel's.
  Output forward(const ModelInputs& in, const nn::OutputRows& rows);
  // At each sequence's first token only, (B, 1, H): what a sentence head reads.
  Output forward_first_tokens(const ModelInputs& in);
  Tensor first_token_states(const ModelInputs& in) override { return forward_first_tokens(in).last_hidden_state; }
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  void share_encoder_of(PretrainedModel& other) override;
  std::shared_ptr<BertEmbeddings> embeddings;  // BERT's, at the embedding width
  std::shared_ptr<AlbertTransformer> encoder;
  std::shared_ptr<nn::Linear> pooler;  // tanh(pooler(h[CLS])); null without a pooling layer

 private:
  // rows null: every position, or (first_tokens) each sequence's first, once the inputs are checked
  Output run(const ModelInputs& in, const nn::OutputRows* rows, bool first_tokens = false);
};

// dense (hidden -> embedding width) + activation + LayerNorm, then the tied decoder and its bias.
class AlbertMLMHead : public nn::Module {
 public:
  AlbertMLMHead(const AlbertConfig& c, Tensor tied_word_embeddings);
  Tensor forward(const Tensor& hidden);  // (B, T, H) -> (B, T, V)
  std::shared_ptr<nn::Linear> dense;
  std::shared_ptr<nn::LayerNorm> layer_norm;  // "LayerNorm"
  Tensor bias;
  Tensor decoder_weight;
  nn::Activation act;
};

class AlbertSOPHead : public nn::Module {
 public:
  explicit AlbertSOPHead(const AlbertConfig& c);
  Tensor forward(const Tensor& pooled);  // (B, H) -> (B, 2)
  std::shared_ptr<nn::Linear> classifier;
  float dropout_p;
};

class AlbertForPreTraining : public AlbertPreTrainedModel, public PretrainingHeads {
 public:
  static constexpr const char* kArchitecture = "AlbertForPreTraining";
  explicit AlbertForPreTraining(const AlbertConfig& c);
  std::string architecture() const override { return kArchitecture; }
  // MLM at the masked positions + sentence-order prediction (sentence_labels: 1 = swapped).
  SentenceTask sentence_task() const override { return SentenceTask::SentenceOrder; }
  PretrainingOutput forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) override;
  void set_checkpoint_activations(bool on) override { albert->encoder->checkpoint_activations = on; }
  // prediction_logits (B, T, V), sop_logits (B, 2), last_hidden_state, pooler_output; with
  // "labels" ((B, T), -100 for none) and "sentence_order_label" (B: 0 in order, 1 swapped):
  // loss = MLM loss + SOP loss, also as mlm_loss and sop_loss.
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  PretrainedModel& base_model() override { return *albert; }
  std::shared_ptr<AlbertModel> albert;
  std::shared_ptr<AlbertMLMHead> predictions;
  std::shared_ptr<AlbertSOPHead> sop_classifier;
};

class AlbertForMaskedLM : public AlbertPreTrainedModel, public PretrainingHeads {
 public:
  static constexpr const char* kArchitecture = "AlbertForMaskedLM";
  explicit AlbertForMaskedLM(const AlbertConfig& c);
  std::string architecture() const override { return kArchitecture; }
  SentenceTask sentence_task() const override { return SentenceTask::None; }
  PretrainingOutput forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) override;
  void set_checkpoint_activations(bool on) override { albert->encoder->checkpoint_activations = on; }
  // "logits" (B, T, V) and last_hidden_state; with "labels": "loss".
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  PretrainedModel& base_model() override { return *albert; }
  std::shared_ptr<AlbertModel> albert;
  std::shared_ptr<AlbertMLMHead> predictions;
};

}  // namespace xg::models
