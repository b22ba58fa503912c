#pragma once
// ELECTRA (Clark et al. 2020): BERT's encoder behind embeddings of their own width (projected to
// the hidden width when they differ), pre-trained by replaced-token detection: a small generator
// (a masked LM) fills the masked positions with samples, and the discriminator, the model that is
// kept, tells at every position whether its token was replaced. Hugging Face's module tree and
// names: electra.embeddings..., electra.embeddings_project, electra.encoder.layer.N... (BERT's),
// discriminator_predictions.{dense,dense_prediction}, generator_predictions.{dense,LayerNorm},
// generator_lm_head.bias (its weight tied to the word embeddings).
#include <memory>

#include "models/bert/bert.hpp"
#include "models/core/pretraining.hpp"
#include "models/electra/electra_config.hpp"

namespace xg::models {

// What every ELECTRA model shares: the config, BERT's initialisation and the name map. Heads hold
// the encoder under "electra."; ElectraModel itself has no prefix.
class ElectraPreTrainedModel : public PretrainedModel {
 public:
  ElectraPreTrainedModel(const ElectraConfig& c, std::string base_prefix);
  std::string model_type() const override { return ElectraConfig::kModelType; }
  // The family's fields without the generator's sizes (a model without a generator has no use for them).
  nlohmann::json family_config_json() const override;
  void init_weights(Generator& gen) override;
  std::string name_from_checkpoint(const std::string& file_name) const override;
  bool is_head_tensor(const std::string& name) const override;
  ElectraConfig config;

 private:
  std::string base_prefix_;
};

class ElectraModel : public ElectraPreTrainedModel {
 public:
  static constexpr const char* kArchitecture = "ElectraModel";
  // `shared_embeddings`: another model's embeddings to use as its own (the generator reads the
  // discriminator's), else its own.
  explicit ElectraModel(const ElectraConfig& c, std::shared_ptr<BertEmbeddings> shared_embeddings = nullptr);
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in);  // last_hidden_state (B, T, H)
  // At `rows` only, (B, rows.per_sequence, H) (nn::Encoder::forward_rows).
  Tensor forward(const ModelInputs& in, const nn::OutputRows& rows);
  Tensor first_token_states(const ModelInputs& in) override;
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  void share_encoder_of(PretrainedModel& other) override;
  std::shared_ptr<BertEmbeddings> embeddings;       // at embedding_size
  std::shared_ptr<nn::Linear> embeddings_project;  // embedding_size -> hidden_size; null when they are equal
  std::shared_ptr<nn::Encoder> encoder;

 private:
  Tensor run(const ModelInputs& in, const nn::OutputRows* rows);
};

// dense + activation (hidden_act) + a Linear to one logit per position: "is this token replaced?".
class ElectraDiscriminatorPredictions : public nn::Module {
 public:
  explicit ElectraDiscriminatorPredictions(const ElectraConfig& c);
  Tensor forward(const Tensor& hidden);  // (B, T, H) -> (B, T)
  std::shared_ptr<nn::Linear> dense, dense_prediction;
  nn::Activation act;
};

// The generator's head: dense (hidden -> embedding width) + GELU + LayerNorm, then the decoder
// tied to the word embeddings with its own bias (generator_lm_head).
class ElectraGeneratorPredictions : public nn::Module {
 public:
  explicit ElectraGeneratorPredictions(const ElectraConfig& c);
  Tensor forward(const Tensor& hidden);  // (N, H) -> (N, E)
  std::shared_ptr<nn::Linear> dense;
  std::shared_ptr<nn::LayerNorm> layer_norm;  // "LayerNorm"
};
class ElectraGeneratorLMHead : public nn::Module {
 public:
  ElectraGeneratorLMHead(const ElectraConfig& c, Tensor tied_word_embeddings);
  Tensor forward(const Tensor& x);  // (N, E) -> (N, V)
  Tensor bias;
  Tensor decoder_weight;  // the word embeddings (not registered here)
};

// The generator: a masked language model. Pre-trains alone as MLM, or inside ElectraForPreTraining.
class ElectraForMaskedLM : public ElectraPreTrainedModel, public PretrainingHeads {
 public:
  static constexpr const char* kArchitecture = "ElectraForMaskedLM";
  explicit ElectraForMaskedLM(const ElectraConfig& c, std::shared_ptr<BertEmbeddings> shared_embeddings = nullptr);
  std::string architecture() const override { return kArchitecture; }
  SentenceTask sentence_task() const override { return SentenceTask::None; }
  // MLM at the masked positions only (the last layer computed there alone).
  PretrainingOutput forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) override;
  void set_checkpoint_activations(bool on) override { electra->encoder->checkpoint_activations = on; }
  // "logits" (B, T, V) and last_hidden_state; with "labels" ((B, T), -100 for none): "loss".
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  PretrainedModel& base_model() override { return *electra; }
  Tensor logits_of(const Tensor& hidden_rows);  // (N, H) -> (N, V)
  std::shared_ptr<ElectraModel> electra;
  std::shared_ptr<ElectraGeneratorPredictions> generator_predictions;
  std::shared_ptr<ElectraGeneratorLMHead> generator_lm_head;
};

// The discriminator, and the replaced-token-detection recipe when the config has a generator.
class ElectraForPreTraining : public ElectraPreTrainedModel, public PretrainingHeads {
 public:
  static constexpr const char* kArchitecture = "ElectraForPreTraining";
  // The discriminator's loss weight against the generator's MLM loss (the paper's lambda).
  static constexpr float kDiscriminatorWeight = 50.f;
  explicit ElectraForPreTraining(const ElectraConfig& c);
  std::string architecture() const override { return kArchitecture; }
  // With the generator's sizes (written only by a model that has one).
  nlohmann::json family_config_json() const override;
  SentenceTask sentence_task() const override { return SentenceTask::None; }
  bool detects_replaced_tokens() const override { return true; }
  void check_can_pretrain() const override;  // throws without a generator
  // Replaced-token detection: the generator's MLM loss at the masked positions, its samples
  // (from its softmax, drawn by masked_position_uniforms, no gradient through them) put in their place,
  // and the discriminator's binary cross-entropy at every real token:
  // loss = mlm_loss + kDiscriminatorWeight * replaced_loss. Throws without a generator.
  PretrainingOutput forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) override;
  void set_checkpoint_activations(bool on) override;
  // "logits" (B, T) and last_hidden_state; with "labels" ((B, T), 1 = replaced): "loss", the
  // binary cross-entropy over the positions attention_mask marks real (all without a mask).
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  PretrainedModel& base_model() override { return *electra; }
  Tensor forward(const ModelInputs& in);  // (B, T) logits
  std::shared_ptr<ElectraModel> electra;
  std::shared_ptr<ElectraDiscriminatorPredictions> discriminator_predictions;
  std::shared_ptr<ElectraForMaskedLM> generator;  // "generator.", over the same embeddings; null without one
};

// One token drawn per row of `logits` (N, V) from softmax(logits), by inverse CDF with the row's
// uniform in [0, 1): what the generator puts at the masked positions.
std::vector<int64_t> sample_from_logits(const Tensor& logits, const std::vector<double>& uniforms);
// The uniform of each masked position of `t` (flat b * seq_len + position): a function of
// t.sample_seed, the sequence's index in the stream (t.first_sequence + b) and the position alone.
std::vector<double> masked_position_uniforms(const PretrainingTargets& t, size_t seq_len);

}  // namespace xg::models
