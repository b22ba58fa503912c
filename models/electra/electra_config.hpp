#pragma once
// ElectraConfig with Hugging Face's config.json field names, plus the generator a pre-training run
// trains beside the discriminator ("generator": its sizes; absent from Hugging Face's files).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "models/bert/bert_config.hpp"

namespace xg::models {

// Only the first token's state is summarised (transformers' default for ELECTRA).
struct FirstTokenSummaryOnly {
  void operator()(const char* field, const std::string& v) const;
};
// An activation name, or "" for none (config.json's null, as transformers' SequenceSummary reads it).
struct ActivationOrNone {
  void operator()(const char* field, const std::string& v) const;
};
// transformers' SequenceSummary projects to num_labels when this is true: not supported.
struct NotProjectedToLabels {
  void operator()(const char* field, bool v) const;
};

// (type, Hugging Face name, default, check): transformers' ElectraConfig defaults (ELECTRA-Small).
#define XG_ELECTRA_CONFIG_FIELDS(X)                                            \
  X(size_t, vocab_size, 30522, config::positive)                               \
  X(size_t, embedding_size, 128, config::positive)                             \
  X(size_t, hidden_size, 256, config::positive)                                \
  X(size_t, num_hidden_layers, 12, config::positive)                           \
  X(size_t, num_attention_heads, 4, config::positive)                          \
  X(size_t, intermediate_size, 1024, config::positive)                         \
  X(std::string, hidden_act, "gelu", config::activation_name)                  \
  X(float, hidden_dropout_prob, 0.1f, config::probability)                     \
  X(float, attention_probs_dropout_prob, 0.1f, config::probability)            \
  X(size_t, max_position_embeddings, 512, config::positive)                    \
  X(size_t, type_vocab_size, 2, config::positive)                              \
  X(float, initializer_range, 0.02f, config::above_zero)                       \
  X(float, layer_norm_eps, 1e-12f, config::above_zero)                         \
  X(std::string, summary_type, "first", FirstTokenSummaryOnly{})               \
  X(bool, summary_use_proj, true, config::any_value)                           \
  X(bool, summary_proj_to_labels, false, NotProjectedToLabels{})               \
  X(std::string, summary_activation, "gelu", ActivationOrNone{})               \
  X(float, summary_first_dropout, 0.f, config::probability)                    \
  X(float, summary_last_dropout, 0.1f, config::probability)                    \
  X(int64_t, pad_token_id, 0, config::non_negative)                            \
  X(std::string, position_embedding_type, "absolute", AbsolutePositionsOnly{})

// The generator of replaced-token detection: a smaller encoder over the same embeddings.
struct ElectraGeneratorSize {
  size_t hidden_size = 0, num_attention_heads = 0, intermediate_size = 0, num_hidden_layers = 0;
  bool operator==(const ElectraGeneratorSize& o) const {
    return hidden_size == o.hidden_size && num_attention_heads == o.num_attention_heads &&
           intermediate_size == o.intermediate_size && num_hidden_layers == o.num_hidden_layers;
  }
};

struct ElectraConfig {
  static constexpr const char* kName = "ElectraConfig";
  static constexpr const char* kModelType = "electra";
  XG_CONFIG_FIELDS(XG_ELECTRA_CONFIG_FIELDS)
  std::optional<ElectraGeneratorSize> generator;  // config.json's "generator"; set by the presets

  // The discriminators of Clark et al. 2020, table 6 (small 12 layers/256 hidden/4 heads with
  // 128-wide embeddings, base 12/768/12, large 24/1024/16), and tiny (2/128/2, embeddings 128);
  // intermediate 4 x hidden. Each with its generator: hidden size, heads and intermediate size
  // times 1/4 (small, large) or 1/3 (base), as the paper's table 7; 1/2 for tiny (a quarter would
  // leave half a head). Throws for other names.
  static ElectraConfig preset(const std::string& name);
  // Field checks, hidden divisible by heads, pad id in the vocabulary, the generator's sizes.
  void validate() const;
  nn::TransformerOptions transformer_options() const;
  // BERT's view of the embeddings (at the embedding width).
  BertConfig embedding_config() const;
  // The generator's own config: its sizes over this one's vocabulary, embeddings and positions;
  // throws when there is no generator.
  ElectraConfig generator_config() const;
  InputLimits input_limits() const { return {vocab_size, type_vocab_size, max_position_embeddings}; }

  nlohmann::json to_json() const;  // every field, "model_type": "electra", and the generator when set
  static ElectraConfig from_json(const nlohmann::json& j, const std::string& source = "config");
  static ElectraConfig from_file(const std::string& path);
};

}  // namespace xg::models
