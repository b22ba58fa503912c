#include "models/bert/bert_config.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace xg::models {

void AbsolutePositionsOnly::operator()(const char* field, const std::string& v) const {
  if (v != "absolute") throw std::invalid_argument(fmt::format("{} '{}' is not supported (absolute only)", field, v));
}

BertConfig BertConfig::preset(const std::string& name) {
  struct P {
    const char* name;
    size_t layers, hidden, heads;
  };
  static const P presets[] = {{"tiny", 2, 128, 2},   {"mini", 4, 256, 4},    {"small", 4, 512, 8},
                              {"medium", 8, 512, 8}, {"base", 12, 768, 12}, {"large", 24, 1024, 16}};
  for (const auto& p : presets)
    if (name == p.name) {
      BertConfig c;
      c.num_hidden_layers = p.layers;
      c.hidden_size = p.hidden;
      c.num_attention_heads = p.heads;
      c.intermediate_size = 4 * p.hidden;
      return c;
    }
  throw std::invalid_argument(
      fmt::format("[BertConfig] unknown preset '{}' (tiny, mini, small, medium, base, large, or a config.json path)", name));
}

void BertConfig::validate() const {
  config::check_fields(*this);
  check_sizes(kName);
}

void BertConfig::check_sizes(const char* who) const {
  if (hidden_size % num_attention_heads != 0)
    throw std::invalid_argument(fmt::format("[{}] hidden_size {} is not divisible by num_attention_heads {}", who,
                                            hidden_size, num_attention_heads));
  if (size_t(pad_token_id) >= vocab_size)
    throw std::invalid_argument(fmt::format("[{}] pad_token_id {} is outside the vocabulary of {}", who, pad_token_id, vocab_size));
}

nn::TransformerOptions BertConfig::transformer_options() const { return transformer_options_of(*this); }

nlohmann::json BertConfig::to_json() const { return config::to_typed_json(*this); }

BertConfig BertConfig::from_json(const nlohmann::json& j, const std::string& source) {
  return config::from_json<BertConfig>(j, source);
}

BertConfig BertConfig::from_file(const std::string& path) { return from_json(config::read_json_file(path, kName), path); }

}  // namespace xg::models
