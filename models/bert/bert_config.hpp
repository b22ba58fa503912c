#pragma once
// BertConfig with Hugging Face's config.json field names, so configs move between the two.
#include <string>

#include <nlohmann/json.hpp>

#include "models/core/config_fields.hpp"
#include "models/core/model_inputs.hpp"
#include "nn/transformer.hpp"

namespace xg::models {

// Only absolute position embeddings are implemented (transformers' default).
struct AbsolutePositionsOnly {
  void operator()(const char* field, const std::string& v) const;
};

// (type, Hugging Face name, default, check): each field declared once, here.
#define XG_BERT_CONFIG_FIELDS(X)                                               \
  X(size_t, vocab_size, 30522, config::positive)                               \
  X(size_t, hidden_size, 768, config::positive)                                \
  X(size_t, num_hidden_layers, 12, config::positive)                           \
  X(size_t, num_attention_heads, 12, config::positive)                         \
  X(size_t, intermediate_size, 3072, config::positive)                         \
  X(std::string, hidden_act, "gelu", config::activation_name)                  \
  X(float, hidden_dropout_prob, 0.1f, config::probability)                     \
  X(float, attention_probs_dropout_prob, 0.1f, config::probability)            \
  X(size_t, max_position_embeddings, 512, config::positive)                    \
  X(size_t, type_vocab_size, 2, config::positive)                              \
  X(float, initializer_range, 0.02f, config::above_zero)                       \
  X(float, layer_norm_eps, 1e-12f, config::above_zero)                         \
  X(int64_t, pad_token_id, 0, config::non_negative)                            \
  X(std::string, position_embedding_type, "absolute", AbsolutePositionsOnly{})

// The Transformer layer options of any config with BERT's layer fields (hidden_size,
// num_attention_heads, intermediate_size, the dropouts, layer_norm_eps, hidden_act).
template <class C>
nn::TransformerOptions transformer_options_of(const C& c) {
  nn::TransformerOptions o;
  o.hidden_size = c.hidden_size;
  o.num_heads = c.num_attention_heads;
  o.intermediate_size = c.intermediate_size;
  o.hidden_dropout = c.hidden_dropout_prob;
  o.attention_dropout = c.attention_probs_dropout_prob;
  o.layer_norm_eps = c.layer_norm_eps;
  o.activation = nn::activation_from_name(c.hidden_act);
  return o;
}

struct BertConfig {
  static constexpr const char* kName = "BertConfig";
  static constexpr const char* kModelType = "bert";
  XG_CONFIG_FIELDS(XG_BERT_CONFIG_FIELDS)

  // tiny (2 layers/128 hidden/2 heads), mini (4/256/4), small (4/512/8), medium (8/512/8),
  // base (12/768/12), large (24/1024/16); intermediate size 4 x hidden. Throws for other names.
  static BertConfig preset(const std::string& name);
  // Throws naming the field and value: each field's check (sizes positive, known activation,
  // probabilities in [0, 1), ...), then hidden divisible by heads and pad_token_id in the vocabulary.
  void validate() const;
  // The checks across fields (hidden by heads, pad id in the vocabulary); errors start with [who].
  void check_sizes(const char* who) const;
  nn::TransformerOptions transformer_options() const;
  InputLimits input_limits() const { return {vocab_size, type_vocab_size, max_position_embeddings}; }

  nlohmann::json to_json() const;  // every field and "model_type": "bert"
  // Reads the fields it knows (missing ones keep their defaults, wrong types throw), validates.
  // `source` names the file in errors.
  static BertConfig from_json(const nlohmann::json& j, const std::string& source = "config");
  static BertConfig from_file(const std::string& path);
};

}  // namespace xg::models
