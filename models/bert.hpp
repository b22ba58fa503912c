#pragma once
// BERT (Devlin et al. 2019) with Hugging Face's module tree, so parameter names are those of its
// checkpoints: bert.embeddings.word_embeddings.weight, bert.encoder.layer.0.attention.self.query
// .weight, ..., bert.pooler.dense.weight, cls.predictions.transform.dense.weight,
// cls.predictions.bias, cls.seq_relationship.weight. The MLM decoder is tied to the word
// embeddings.
#include <memory>
#include <vector>

#include "models/bert_config.hpp"
#include "nn/nn.hpp"

namespace xg::models {

// A batch of B sequences of T tokens, row-major.
struct BertInputs {
  size_t batch = 0, seq_len = 0;
  std::vector<int64_t> input_ids;       // B*T
  std::vector<int64_t> token_type_ids;  // B*T, or empty for all zeros
  Tensor attention_mask;                // (B, T) of 0/1, or undefined for no padding
  // Throws naming the field when sizes disagree or ids fall outside `config`'s ranges.
  void validate(const BertConfig& config) const;
};

class BertEmbeddings : public nn::Module {
 public:
  explicit BertEmbeddings(const BertConfig& c);
  Tensor forward(const BertInputs& in);
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

class BertModel : public nn::Module {
 public:
  explicit BertModel(const BertConfig& c);
  struct Output {
    Tensor last_hidden_state;  // (B, T, H)
    Tensor pooler_output;      // (B, H)
  };
  Output forward(const BertInputs& in);
  BertConfig config;
  std::shared_ptr<BertEmbeddings> embeddings;
  std::shared_ptr<nn::Encoder> encoder;
  std::shared_ptr<BertPooler> pooler;
};

// dense + activation + LayerNorm, then the tied decoder and its bias: cls.predictions.
class BertLMHead : public nn::Module {
 public:
  BertLMHead(const BertConfig& c, Tensor tied_word_embeddings);
  // hidden rows (N, H) -> vocabulary logits (N, V)
  Tensor forward(const Tensor& rows);
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

// What a pre-training step needs besides the inputs.
struct PretrainingTargets {
  std::vector<int64_t> masked_positions;  // flat indices b*T + t of the predicted tokens
  std::vector<int64_t> masked_labels;     // their original ids
  std::vector<int64_t> next_sentence_labels;  // B: 0 = B follows A, 1 = random
};

class BertForPreTraining : public nn::Module {
 public:
  explicit BertForPreTraining(const BertConfig& c);
  struct Output {
    Tensor loss, mlm_loss, nsp_loss;  // scalars: loss = mlm_loss + nsp_loss
    Tensor mlm_logits;                // (masked tokens, V): only where predictions are made
    Tensor nsp_logits;                // (B, 2)
    size_t mlm_correct = 0, nsp_correct = 0;
  };
  // The MLM head runs only at the masked positions, as the original BERT does.
  Output forward(const BertInputs& in, const PretrainingTargets& targets);
  // Logits at every position (B, T, V) and NSP logits, for inference and checkpoint parity.
  struct FullOutput {
    BertModel::Output base;
    Tensor prediction_logits, seq_relationship_logits;
  };
  FullOutput forward_full(const BertInputs& in);
  // BERT's initialisation: N(0, initializer_range) weights, zero biases, LayerNorm 1 and 0.
  void init_weights(Generator& gen);

  BertConfig config;
  std::shared_ptr<BertModel> bert;
  std::shared_ptr<BertPreTrainingHeads> cls;
};

}  // namespace xg::models
