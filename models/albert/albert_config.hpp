#pragma once
// AlbertConfig with Hugging Face's config.json field names.
#include <string>

#include <nlohmann/json.hpp>

#include "models/bert/bert_config.hpp"

namespace xg::models {

// (type, Hugging Face name, default, check): transformers' AlbertConfig defaults (xxlarge shapes).
#define XG_ALBERT_CONFIG_FIELDS(X)                                  \
  X(size_t, vocab_size, 30000, config::positive)                    \
  X(size_t, embedding_size, 128, config::positive)                  \
  X(size_t, hidden_size, 4096, config::positive)                    \
  X(size_t, num_hidden_layers, 12, config::positive)                \
  X(size_t, num_hidden_groups, 1, config::positive)                 \
  X(size_t, num_attention_heads, 64, config::positive)              \
  X(size_t, intermediate_size, 16384, config::positive)             \
  X(size_t, inner_group_num, 1, config::positive)                   \
  X(std::string, hidden_act, "gelu_new", config::activation_name)   \
  X(float, hidden_dropout_prob, 0.f, config::probability)           \
  X(float, attention_probs_dropout_prob, 0.f, config::probability)  \
  X(size_t, max_position_embeddings, 512, config::positive)         \
  X(size_t, type_vocab_size, 2, config::positive)                   \
  X(float, initializer_range, 0.02f, config::above_zero)            \
  X(float, layer_norm_eps, 1e-12f, config::above_zero)              \
  X(float, classifier_dropout_prob, 0.1f, config::probability)      \
  X(int64_t, pad_token_id, 0, config::non_negative)                 \
  X(int64_t, bos_token_id, 2, config::non_negative)                 \
  X(int64_t, eos_token_id, 3, config::non_negative)                 \
  X(std::string, position_embedding_type, "absolute", AbsolutePositionsOnly{})

struct AlbertConfig {
  static constexpr const char* kName = "AlbertConfig";
  static constexpr const char* kModelType = "albert";
  XG_CONFIG_FIELDS(XG_ALBERT_CONFIG_FIELDS)

  // tiny (2 layers, 128 hidden, 2 heads, 64-wide embeddings), small (4/512/8), and the paper's
  // base (12/768/12), large (24/1024/16), xlarge (24/2048/16), xxlarge (12/4096/64); embeddings
  // 128 wide but for tiny, intermediate 4 x hidden, one shared group. Throws for other names.
  static AlbertConfig preset(const std::string& name);
  // Field checks, hidden divisible by heads, groups no more than layers, pad id in the vocabulary.
  void validate() const;
  // BERT's view of the shared pieces: the transformer layer options (hidden width) and the
  // embeddings (embedding width).
  nn::TransformerOptions transformer_options() const;
  BertConfig embedding_config() const;
  InputLimits input_limits() const { return {vocab_size, type_vocab_size, max_position_embeddings}; }

  nlohmann::json to_json() const;
  static AlbertConfig from_json(const nlohmann::json& j, const std::string& source = "config");
  static AlbertConfig from_file(const std::string& path);
};

}  // namespace xg::models
