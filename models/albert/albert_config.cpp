#include <fmt/format.h>

#include <stdexcept>

#include "models/albert/albert_config.hpp"

namespace xg::models {

AlbertConfig AlbertConfig::preset(const std::string& name) {
  struct P {
    const char* name;
    size_t layers, hidden, heads, embedding;
  };
  static const P presets[] = {{"tiny", 2, 128, 2, 64},     {"small", 4, 512, 8, 128},    {"base", 12, 768, 12, 128},
                              {"large", 24, 1024, 16, 128}, {"xlarge", 24, 2048, 16, 128}, {"xxlarge", 12, 4096, 64, 128}};
  for (const auto& p : presets)
    if (name == p.name) {
      AlbertConfig c;
      c.num_hidden_layers = p.layers;
      c.hidden_size = p.hidden;
      c.num_attention_heads = p.heads;
      c.intermediate_size = 4 * p.hidden;
      c.embedding_size = p.embedding;
      return c;
    }
  throw std::invalid_argument(fmt::format(
      "[AlbertConfig] unknown preset '{}' (tiny, small, base, large, xlarge, xxlarge, or a config.json path)", name));
}

void AlbertConfig::validate() const {
  config::check_fields(*this);
  embedding_config().check_sizes(kName);
  if (hidden_size % num_attention_heads != 0)
    throw std::invalid_argument(fmt::format("[AlbertConfig] hidden_size {} is not divisible by num_attention_heads {}",
                                            hidden_size, num_attention_heads));
  if (num_hidden_groups > num_hidden_layers)
    throw std::invalid_argument(fmt::format("[AlbertConfig] num_hidden_groups {} is more than num_hidden_layers {}",
                                            num_hidden_groups, num_hidden_layers));
}

nn::TransformerOptions AlbertConfig::transformer_options() const { return transformer_options_of(*this); }

BertConfig AlbertConfig::embedding_config() const {
  BertConfig b;
  b.vocab_size = vocab_size;
  b.hidden_size = embedding_size;  // the embeddings' width; one "head" so the shape check passes
  b.num_attention_heads = 1;
  b.max_position_embeddings = max_position_embeddings;
  b.type_vocab_size = type_vocab_size;
  b.hidden_dropout_prob = hidden_dropout_prob;
  b.layer_norm_eps = layer_norm_eps;
  b.pad_token_id = pad_token_id;
  return b;
}

nlohmann::json AlbertConfig::to_json() const { return config::to_typed_json(*this); }

AlbertConfig AlbertConfig::from_json(const nlohmann::json& j, const std::string& source) {
  return config::from_json<AlbertConfig>(j, source);
}

AlbertConfig AlbertConfig::from_file(const std::string& path) { return from_json(config::read_json_file(path, kName), path); }

}  // namespace xg::models
