#pragma once
// RoBERTa (Liu et al. 2019): BERT's encoder with positions counted from padding_idx + 1 over real
// tokens, one token type, no next-sentence head. Hugging Face's module tree and names:
// roberta.embeddings..., roberta.encoder.layer.N..., lm_head.dense, lm_head.layer_norm,
// lm_head.bias, the decoder tied to the word embeddings (RobertaModel's own names lack "roberta.").
#include <memory>

#include "models/bert/bert.hpp"
#include "models/roberta/roberta_config.hpp"

namespace xg::models {

// Positions as transformers' create_position_ids_from_input_ids: padding_idx + 1 onwards over
// non-padding tokens, padding_idx at padding; the padding row of the table gets no gradient.
class RobertaEmbeddings : public BertEmbeddings {
 public:
  explicit RobertaEmbeddings(const RobertaConfig& c);
  Tensor default_position_ids(const ModelInputs& in) const override;
  size_t first_position() const override { return size_t(padding_idx) + 1; }
  int64_t padding_idx;
};

// RoBERTa's name map, shared by its architectures: the HF name -> this model's name ("" to skip
// the position_ids buffer and the tied decoder), bare-model names prefixed for head models.
std::string roberta_name_from_checkpoint(const std::string& file_name, bool has_prefix);
bool is_roberta_head_tensor(const std::string& name);

class RobertaModel : public BertModel {
 public:
  static constexpr const char* kArchitecture = "RobertaModel";
  explicit RobertaModel(const RobertaConfig& c, bool add_pooling_layer = true);
  std::string architecture() const override { return kArchitecture; }
  std::string model_type() const override { return RobertaConfig::kModelType; }
  nlohmann::json family_config_json() const override { return roberta_config.to_json(); }
  std::string name_from_checkpoint(const std::string& n) const override { return roberta_name_from_checkpoint(n, false); }
  bool is_head_tensor(const std::string& name) const override { return is_roberta_head_tensor(name); }
  RobertaConfig roberta_config;
};

// dense + GELU + layer_norm, then the tied decoder and its bias: lm_head.
class RobertaLMHead : public nn::Module {
 public:
  RobertaLMHead(const RobertaConfig& c, Tensor tied_word_embeddings);
  // hidden states (B, T, H) -> vocabulary logits (B, T, V)
  Tensor forward(const Tensor& hidden);
  std::shared_ptr<nn::Linear> dense;
  std::shared_ptr<nn::LayerNorm> layer_norm;
  Tensor bias;
  Tensor decoder_weight;  // the word embeddings (registered by the encoder)
};

class RobertaForMaskedLM : public BertPreTrainedModel, public PretrainingHeads {
 public:
  static constexpr const char* kArchitecture = "RobertaForMaskedLM";
  explicit RobertaForMaskedLM(const RobertaConfig& c);
  std::string architecture() const override { return kArchitecture; }
  SentenceTask sentence_task() const override { return SentenceTask::None; }
  PretrainingOutput forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) override;
  void set_checkpoint_activations(bool on) override { roberta->encoder->checkpoint_activations = on; }
  std::string model_type() const override { return RobertaConfig::kModelType; }
  nlohmann::json family_config_json() const override { return roberta->roberta_config.to_json(); }
  std::string name_from_checkpoint(const std::string& n) const override { return roberta_name_from_checkpoint(n, true); }
  bool is_head_tensor(const std::string& name) const override { return is_roberta_head_tensor(name); }
  void init_weights(Generator& gen) override;
  // Vocabulary logits at every position: (B, T, V).
  Tensor forward(const ModelInputs& in);
  // "logits" and last_hidden_state; with "labels" ((B, T), -100 for none): "loss".
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  PretrainedModel& base_model() override { return *roberta; }

  std::shared_ptr<RobertaModel> roberta;
  std::shared_ptr<RobertaLMHead> lm_head;
};

}  // namespace xg::models
