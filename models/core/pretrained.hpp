#pragma once
// The base of every model the registry builds (a family's bare encoder and each head over it),
// as transformers' PreTrainedModel: its config, its architecture name, its initialisation, the
// map from checkpoint tensor names to its own, and a forward with Hugging Face's output names.
// Loaders, trainers and programs use this interface and never name a family.
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/core/model_inputs.hpp"
#include "nn/module.hpp"

namespace xg::models {

// Labels by Hugging Face's argument names, int64 tensors: "labels" ((B, T) token labels with -100
// for "not predicted", or (B) class labels), "next_sentence_label" (B), ...
using Labels = std::map<std::string, Tensor>;
// Outputs by Hugging Face's names: last_hidden_state, pooler_output, logits, prediction_logits,
// seq_relationship_logits, loss, ...
using NamedOutputs = std::map<std::string, Tensor>;

class PretrainedModel : public nn::Module {
 public:
  virtual std::string model_type() const = 0;    // config.json's "model_type", e.g. "bert"
  virtual std::string architecture() const = 0;  // config.json's "architectures", e.g. "BertForMaskedLM"
  // The family's config fields (with model_type); config_json() adds "architectures".
  virtual nlohmann::json family_config_json() const = 0;
  nlohmann::json config_json() const;
  // The family's initialisation of every parameter (before loading, or to train from scratch).
  virtual void init_weights(Generator& gen) = 0;

  // This model's parameter name for a tensor name found in a checkpoint of any architecture of
  // the family (older spellings included), or "" for tensors to skip (buffers, tied copies).
  virtual std::string name_from_checkpoint(const std::string& file_name) const = 0;
  // Whether a name (this model's, or one name_from_checkpoint gave) belongs to a head or pooler
  // that another architecture of the family lacks: missing ones are initialised randomly,
  // unused ones ignored, both with a note. A missing or unknown encoder tensor is an error.
  virtual bool is_head_tensor(const std::string& name) const = 0;
  // The bare encoder under the heads (transformers' base_model): this model itself for one without heads.
  virtual PretrainedModel& base_model() { return *this; }
  // Makes this model's embeddings and encoder layers those of `other`'s base model (the same
  // family and sizes): one set of weights that both models train (multi-task fine-tuning); the
  // pooler and the heads stay each model's own. Throws naming both architectures when they differ,
  // and for a model whose LM decoder is tied to its word embeddings (masked-LM, pre-training).
  virtual void share_encoder_of(PretrainedModel& other);
  // The tensors to save, under Hugging Face's names, each shared tensor once.
  virtual nn::StateDict hf_state_dict() const { return state_dict(); }

  // Forward as transformers' model(**inputs, **labels): the outputs it returns, and "loss" when
  // labels are given (throws naming unknown or incomplete labels).
  virtual NamedOutputs forward_named(const ModelInputs& in, const Labels& labels = {}) = 0;
  // A base model's last_hidden_state at each sequence's first token only, (B, 1, H): what a
  // sentence head reads, with the last layer computed there alone. Throws, naming the
  // architecture, for a model without that forward (a model with heads: ask its base_model()).
  virtual Tensor first_token_states(const ModelInputs& in);

 protected:
  // share_encoder_of for a family's base model M (this object; members `embeddings` and
  // `encoder`): checks, then takes `other`'s embeddings and encoder layers as its own.
  template <class M>
  void share_embeddings_and_encoder(PretrainedModel& other);
};

// What share_encoder_of checks before sharing: `other` is a base model of the same family and
// config as `self` (a base model too); throws naming both and the first field that differs.
void check_can_share_encoder(const PretrainedModel& self, const PretrainedModel& other);

template <class M>
void PretrainedModel::share_embeddings_and_encoder(PretrainedModel& other) {
  M& self = static_cast<M&>(*this);
  check_can_share_encoder(self, other.base_model());  // the same family and sizes
  auto* o = dynamic_cast<M*>(&other.base_model());
  if (!o) throw std::invalid_argument("[share_encoder] " + other.architecture() + " is not a " + self.architecture());
  self.embeddings = o->embeddings;
  self.replace_module("embeddings", self.embeddings);
  self.encoder = o->encoder;
  self.replace_module("encoder", self.encoder);
}


// Throws unless every key of `labels` is one of `known` (naming the architecture and the keys it takes).
void check_label_names(const Labels& labels, const std::vector<std::string>& known, const std::string& architecture);
// Cross-entropy of (B, T, C) logits against B*T labels, -100 for "not predicted" (transformers'
// masked-LM and token-classification loss); throws when the label count is wrong.
Tensor token_labels_loss(const Tensor& logits, const Tensor& labels);
// Cross-entropy of (B, C) logits against B labels (next-sentence or sequence classification).
Tensor sequence_labels_loss(const Tensor& logits, const Tensor& labels, const char* name);

}  // namespace xg::models
