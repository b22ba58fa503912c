#pragma once
// BERT (Devlin et al. 2019) with Hugging Face's module tree, so parameter names are those of its
// checkpoints: bert.embeddings.word_embeddings.weight, bert.encoder.layer.0.attention.self.query
// .weight, ..., bert.pooler.dense.weight, cls.predictions.transform.dense.weight,
// cls.predictions.bias, cls.seq_relationship.weight (BertModel's own names lack "bert."). The MLM
// decoder is tied to the word embeddings.
#include <memory>
#include <vector>

#include "models/bert/bert_config.hpp"
#include "models/core/pretrained.hpp"
#include "models/core/pretraining.hpp"
#include "nn/nn.hpp"

namespace xg::models {

using BertInputs = ModelInputs;

class BertEmbeddings : public nn::Module {
 public:
  // position_padding_idx: the position row that gets no gradient (RoBERTa's padding_idx), or -1.
  explicit BertEmbeddings(const BertConfig& c, int64_t position_padding_idx = -1);
  // Uses in.position_ids when given, else default_position_ids(in).
  Tensor forward(const ModelInputs& in);
  // BERT counts 0..T-1 in every row. A family with other positions overrides this one function
  // (RoBERTa: padding_idx + 1 onwards over non-padding tokens, padding at padding_idx).
  // Returns (B, T) int64.
  virtual Tensor default_position_ids(const ModelInputs& in) const;
  // Where default positions start counting, for the length check.
  virtual size_t first_position() const { return 0; }
  std::shared_ptr<nn::Embedding> word_embeddings, position_embeddings, token_type_embeddings;
  std::shared_ptr<nn::LayerNorm> layer_norm;  // "LayerNorm"
  float dropout_p;
};

class BertPooler : public nn::Module {
 public:
  explicit BertPooler(const BertConfig& c);
  // tanh(dense(hidden state of [CLS])): (B, T, H) -> (B, H)
  Tensor forward(const Tensor& hidden);
  std::shared_ptr<nn::Linear> dense;
};

// dense + activation + LayerNorm, then the tied decoder and its bias: cls.predictions.
class BertLMHead : public nn::Module {
 public:
  BertLMHead(const BertConfig& c, Tensor tied_word_embeddings);
  // hidden rows (N, H) -> vocabulary logits (N, V)
  Tensor forward(const Tensor& rows);
  // hidden states (B, T, H) -> logits at every position (B, T, V)
  Tensor forward_sequence(const Tensor& hidden);
  std::shared_ptr<nn::Module> transform;  // holds "dense" and "LayerNorm"
  std::shared_ptr<nn::Linear> transform_dense;
  std::shared_ptr<nn::LayerNorm> transform_norm;
  Tensor bias;
  Tensor decoder_weight;  // the word embeddings (not registered here)
  nn::Activation act;
};

class BertPreTrainingHeads : public nn::Module {
 public:
  BertPreTrainingHeads(const BertConfig& c, Tensor tied_word_embeddings);
  std::shared_ptr<BertLMHead> predictions;
  std::shared_ptr<nn::Linear> seq_relationship;
};

// What every registered BERT model shares (transformers' BertPreTrainedModel): the config, BERT's
// initialisation and the checkpoint name map. Heads hold the encoder under "bert."; BertModel
// itself has no prefix.
class BertPreTrainedModel : public PretrainedModel {
 public:
  BertPreTrainedModel(const BertConfig& c, std::string base_prefix);
  std::string model_type() const override { return BertConfig::kModelType; }
  nlohmann::json family_config_json() const override { return config.to_json(); }
  // N(0, initializer_range) weights, zero biases, LayerNorm 1 and 0, the padding row 0.
  void init_weights(Generator& gen) override;
  std::string name_from_checkpoint(const std::string& file_name) const override;
  bool is_head_tensor(const std::string& name) const override;

  BertConfig config;

 private:
  std::string base_prefix_;  // "bert." or ""
};

class BertModel : public BertPreTrainedModel {
 public:
  static constexpr const char* kArchitecture = "BertModel";
  // `embeddings`: a family's own embeddings (other default positions), else BERT's.
  explicit BertModel(const BertConfig& c, bool add_pooling_layer = true, std::shared_ptr<BertEmbeddings> embeddings = nullptr);
  std::string architecture() const override { return kArchitecture; }
  struct Output {
    Tensor last_hidden_state;  // (B, T, H)
    Tensor pooler_output;      // (B, H); undefined without a pooling layer
  };
  Output forward(const ModelInputs& in);
  // last_hidden_state at `rows` only, (B, rows.per_sequence, H) (nn::Encoder::forward_rows). The
  // pooler reads each sequence's first row, which must then be its position 0.
  Output forward(const ModelInputs& in, const nn::OutputRows& rows);
  // At each sequence's first token only, (B, 1, H): what a sentence head reads.
  Output forward_first_tokens(const ModelInputs& in);
  Tensor first_token_states(const ModelInputs& in) override { return forward_first_tokens(in).last_hidden_state; }
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  void share_encoder_of(PretrainedModel& other) override;
  std::shared_ptr<BertEmbeddings> embeddings;
  std::shared_ptr<nn::Encoder> encoder;
  std::shared_ptr<BertPooler> pooler;  // null without a pooling layer

 private:
  // rows null: every position, or (first_tokens) each sequence's first, once the inputs are checked
  Output run(const ModelInputs& in, const nn::OutputRows* rows, bool first_tokens = false);
};

class BertForPreTraining : public BertPreTrainedModel, public PretrainingHeads {
 public:
  static constexpr const char* kArchitecture = "BertForPreTraining";
  explicit BertForPreTraining(const BertConfig& c);
  std::string architecture() const override { return kArchitecture; }
  // MLM at the masked positions + next-sentence prediction; sentence_loss is NSP's.
  PretrainingOutput forward(const ModelInputs& in, const PretrainingTargets& targets);
  SentenceTask sentence_task() const override { return SentenceTask::NextSentence; }
  PretrainingOutput forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) override { return forward(in, t); }
  void set_checkpoint_activations(bool on) override { bert->encoder->checkpoint_activations = on; }
  // Logits at every position (B, T, V) and NSP logits, for inference and checkpoint parity.
  struct FullOutput {
    BertModel::Output base;
    Tensor prediction_logits, seq_relationship_logits;
  };
  FullOutput forward_full(const ModelInputs& in);
  // Hugging Face's outputs plus last_hidden_state and pooler_output; with "labels" (B*T, -100
  // for none) and "next_sentence_label" (B): loss, mlm_loss and nsp_loss.
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  PretrainedModel& base_model() override { return *bert; }

  std::shared_ptr<BertModel> bert;
  std::shared_ptr<BertPreTrainingHeads> cls;
};

// cls.predictions only: BertForMaskedLM's "cls".
class BertOnlyMLMHead : public nn::Module {
 public:
  BertOnlyMLMHead(const BertConfig& c, Tensor tied_word_embeddings);
  std::shared_ptr<BertLMHead> predictions;
};

// Masked language modelling without NSP (and, as in transformers, without the pooler).
class BertForMaskedLM : public BertPreTrainedModel, public PretrainingHeads {
 public:
  static constexpr const char* kArchitecture = "BertForMaskedLM";
  explicit BertForMaskedLM(const BertConfig& c);
  std::string architecture() const override { return kArchitecture; }
  SentenceTask sentence_task() const override { return SentenceTask::None; }
  PretrainingOutput forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) override;
  void set_checkpoint_activations(bool on) override { bert->encoder->checkpoint_activations = on; }
  // Vocabulary logits at every position: (B, T, V).
  Tensor forward(const ModelInputs& in);
  // "logits" and last_hidden_state; with "labels" (B*T, -100 for none): "loss".
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) override;
  PretrainedModel& base_model() override { return *bert; }

  std::shared_ptr<BertModel> bert;
  std::shared_ptr<BertOnlyMLMHead> cls;
};

// The checkpoint name a tensor should have in a BERT model with heads ("bert." prefixed): bare
// BertModel names gain "bert.", TF-era LayerNorm gamma/beta become weight/bias,
// cls.predictions.decoder.bias becomes cls.predictions.bias; "" for tensors to skip
// (position_ids and token_type_ids buffers, the tied decoder weight).
std::string canonical_bert_name(const std::string& name);

}  // namespace xg::models
