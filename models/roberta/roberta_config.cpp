#include <fmt/format.h>

#include <stdexcept>

#include "models/roberta/roberta_config.hpp"

namespace xg::models {

RobertaConfig::RobertaConfig() {
  vocab_size = 50265;
  max_position_embeddings = 514;
  type_vocab_size = 1;
  layer_norm_eps = 1e-5f;
  pad_token_id = 1;
}

RobertaConfig RobertaConfig::preset(const std::string& name) {
  BertConfig shape;
  try {
    shape = BertConfig::preset(name);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(fmt::format(
        "[RobertaConfig] unknown preset '{}' (tiny, mini, small, medium, base, large, or a config.json path)", name));
  }
  RobertaConfig c;
  c.num_hidden_layers = shape.num_hidden_layers;
  c.hidden_size = shape.hidden_size;
  c.num_attention_heads = shape.num_attention_heads;
  c.intermediate_size = shape.intermediate_size;
  return c;
}

void RobertaConfig::validate() const {
  config::check_fields(*this);
  check_sizes(kName);
  // Real tokens are numbered from padding_idx + 1: a table of pad + 1 rows has no room for any.
  if (max_position_embeddings <= size_t(pad_token_id) + 1)
    throw std::invalid_argument(fmt::format("[RobertaConfig] max_position_embeddings {} leaves no positions after "
                                            "pad_token_id {} (positions start at pad_token_id + 1)",
                                            max_position_embeddings, pad_token_id));
}

nlohmann::json RobertaConfig::to_json() const { return config::to_typed_json(*this); }

RobertaConfig RobertaConfig::from_json(const nlohmann::json& j, const std::string& source) {
  // A field config.json leaves out takes transformers' RobertaConfig default (BERT's), not
  // roberta-base's: the file means what it means to from_pretrained.
  nlohmann::json filled = j;
  if (filled.is_object())
    for (const auto& [key, value] : {std::pair{"max_position_embeddings", nlohmann::json(512)},
                                     {"type_vocab_size", nlohmann::json(2)}, {"layer_norm_eps", nlohmann::json(1e-12)}})
      if (!filled.contains(key) || filled[key].is_null()) filled[key] = value;
  return config::from_json<RobertaConfig>(filled, source);
}

RobertaConfig RobertaConfig::from_file(const std::string& path) {
  return from_json(config::read_json_file(path, kName), path);
}

}  // namespace xg::models
