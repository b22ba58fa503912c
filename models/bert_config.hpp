#pragma once
// BertConfig with Hugging Face's config.json field names, so configs move between the two.
#include <string>

#include <nlohmann/json.hpp>

#include "nn/transformer.hpp"

namespace xg::models {

struct BertConfig {
  size_t vocab_size = 30522;
  size_t hidden_size = 768;
  size_t num_hidden_layers = 12;
  size_t num_attention_heads = 12;
  size_t intermediate_size = 3072;
  std::string hidden_act = "gelu";
  float hidden_dropout_prob = 0.1f;
  float attention_probs_dropout_prob = 0.1f;
  size_t max_position_embeddings = 512;
  size_t type_vocab_size = 2;
  float initializer_range = 0.02f;
  float layer_norm_eps = 1e-12f;
  int64_t pad_token_id = 0;

  // tiny (2 layers/128 hidden/2 heads), mini (4/256/4), small (4/512/8), medium (8/512/8),
  // base (12/768/12), large (24/1024/16); intermediate size 4 x hidden. Throws for other names.
  static BertConfig preset(const std::string& name);
  // Throws naming the field and value: sizes positive, hidden divisible by heads, known
  // activation, probabilities in [0, 1).
  void validate() const;
  nn::TransformerOptions transformer_options() const;

  nlohmann::json to_json() const;  // with "model_type": "bert", "architectures"
  // Reads the fields it knows; missing ones keep their defaults; validates. `source` names the
  // file in errors.
  static BertConfig from_json(const nlohmann::json& j, const std::string& source = "config");
  static BertConfig from_file(const std::string& path);
  void save(const std::string& path) const;  // atomic
};

}  // namespace xg::models
