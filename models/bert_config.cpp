#include "models/bert_config.hpp"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

#include "nn/atomic_file.hpp"

namespace xg::models {

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
  auto positive = [](size_t v, const char* f) {
    if (v == 0) throw std::invalid_argument(fmt::format("[BertConfig] {} must be positive, got 0", f));
  };
  positive(vocab_size, "vocab_size");
  positive(hidden_size, "hidden_size");
  positive(num_hidden_layers, "num_hidden_layers");
  positive(num_attention_heads, "num_attention_heads");
  positive(intermediate_size, "intermediate_size");
  positive(max_position_embeddings, "max_position_embeddings");
  positive(type_vocab_size, "type_vocab_size");
  if (hidden_size % num_attention_heads != 0)
    throw std::invalid_argument(fmt::format("[BertConfig] hidden_size {} is not divisible by num_attention_heads {}",
                                            hidden_size, num_attention_heads));
  nn::activation_from_name(hidden_act);
  for (auto [p, f] : {std::pair{hidden_dropout_prob, "hidden_dropout_prob"},
                      {attention_probs_dropout_prob, "attention_probs_dropout_prob"}})
    if (!(p >= 0.f && p < 1.f)) throw std::invalid_argument(fmt::format("[BertConfig] {} {} is not in [0, 1)", f, p));
  if (!(layer_norm_eps > 0.f)) throw std::invalid_argument(fmt::format("[BertConfig] layer_norm_eps {} must be > 0", layer_norm_eps));
  if (!(initializer_range > 0.f))
    throw std::invalid_argument(fmt::format("[BertConfig] initializer_range {} must be > 0", initializer_range));
  if (pad_token_id < 0 || size_t(pad_token_id) >= vocab_size)
    throw std::invalid_argument(fmt::format("[BertConfig] pad_token_id {} is outside the vocabulary of {}", pad_token_id, vocab_size));
}

nn::TransformerOptions BertConfig::transformer_options() const {
  nn::TransformerOptions o;
  o.hidden_size = hidden_size;
  o.num_heads = num_attention_heads;
  o.intermediate_size = intermediate_size;
  o.hidden_dropout = hidden_dropout_prob;
  o.attention_dropout = attention_probs_dropout_prob;
  o.layer_norm_eps = layer_norm_eps;
  o.activation = nn::activation_from_name(hidden_act);
  return o;
}

nlohmann::json BertConfig::to_json() const {
  return {{"architectures", {"BertForPreTraining"}},
          {"model_type", "bert"},
          {"vocab_size", vocab_size},
          {"hidden_size", hidden_size},
          {"num_hidden_layers", num_hidden_layers},
          {"num_attention_heads", num_attention_heads},
          {"intermediate_size", intermediate_size},
          {"hidden_act", hidden_act},
          {"hidden_dropout_prob", hidden_dropout_prob},
          {"attention_probs_dropout_prob", attention_probs_dropout_prob},
          {"max_position_embeddings", max_position_embeddings},
          {"type_vocab_size", type_vocab_size},
          {"initializer_range", initializer_range},
          {"layer_norm_eps", layer_norm_eps},
          {"pad_token_id", pad_token_id},
          {"position_embedding_type", "absolute"}};
}

BertConfig BertConfig::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw std::invalid_argument(fmt::format("[BertConfig] {}: not a JSON object", source));
  BertConfig c;
  auto read = [&](const char* key, auto& field) {
    if (!j.contains(key) || j[key].is_null()) return;
    try {
      using T = std::decay_t<decltype(field)>;
      if constexpr (std::is_same_v<T, size_t>) {
        if (!j[key].is_number_integer() || j[key].get<int64_t>() < 0) throw std::invalid_argument("");
      }
      field = j[key].get<std::decay_t<decltype(field)>>();
    } catch (const std::exception&) {
      throw std::invalid_argument(fmt::format("[BertConfig] {}: field {} has an invalid value {}", source, key, j[key].dump()));
    }
  };
  read("vocab_size", c.vocab_size);
  read("hidden_size", c.hidden_size);
  read("num_hidden_layers", c.num_hidden_layers);
  read("num_attention_heads", c.num_attention_heads);
  read("intermediate_size", c.intermediate_size);
  read("hidden_act", c.hidden_act);
  read("hidden_dropout_prob", c.hidden_dropout_prob);
  read("attention_probs_dropout_prob", c.attention_probs_dropout_prob);
  read("max_position_embeddings", c.max_position_embeddings);
  read("type_vocab_size", c.type_vocab_size);
  read("initializer_range", c.initializer_range);
  read("layer_norm_eps", c.layer_norm_eps);
  read("pad_token_id", c.pad_token_id);
  if (j.contains("position_embedding_type") && j["position_embedding_type"] != "absolute")
    throw std::invalid_argument(fmt::format("[BertConfig] {}: position_embedding_type {} is not supported (absolute only)",
                                            source, j["position_embedding_type"].dump()));
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{} (in {})", e.what(), source));
  }
  return c;
}

BertConfig BertConfig::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("[BertConfig] {}: cannot open", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("[BertConfig] {}: not valid JSON ({})", path, e.what()));
  }
  return from_json(j, path);
}

void BertConfig::save(const std::string& path) const { nn::write_text_atomically(path, to_json().dump(2) + "\n"); }

}  // namespace xg::models
