#include "models/electra/electra_config.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace xg::models {

void FirstTokenSummaryOnly::operator()(const char* field, const std::string& v) const {
  if (v != "first") throw std::invalid_argument(fmt::format("{} '{}' is not supported (first only)", field, v));
}

void ActivationOrNone::operator()(const char* field, const std::string& v) const {
  if (!v.empty()) config::activation_name(field, v);
}

void NotProjectedToLabels::operator()(const char* field, bool v) const {
  if (v) throw std::invalid_argument(fmt::format("{} true is not supported (the summary keeps the hidden width)", field));
}

ElectraConfig ElectraConfig::preset(const std::string& name) {
  struct P {
    const char* name;
    size_t layers, hidden, heads, embedding, generator_divisor;
  };
  static const P presets[] = {{"tiny", 2, 128, 2, 128, 2},
                              {"small", 12, 256, 4, 128, 4},
                              {"base", 12, 768, 12, 768, 3},
                              {"large", 24, 1024, 16, 1024, 4}};
  for (const auto& p : presets)
    if (name == p.name) {
      ElectraConfig c;
      c.num_hidden_layers = p.layers;
      c.hidden_size = p.hidden;
      c.num_attention_heads = p.heads;
      c.intermediate_size = 4 * p.hidden;
      c.embedding_size = p.embedding;
      c.generator = ElectraGeneratorSize{p.hidden / p.generator_divisor, std::max<size_t>(1, p.heads / p.generator_divisor),
                                         4 * p.hidden / p.generator_divisor, p.layers};
      return c;
    }
  throw std::invalid_argument(
      fmt::format("[ElectraConfig] unknown preset '{}' (tiny, small, base, large, or a config.json path)", name));
}

void ElectraConfig::validate() const {
  config::check_fields(*this);
  embedding_config().check_sizes(kName);
  if (hidden_size % num_attention_heads != 0)
    throw std::invalid_argument(fmt::format("[ElectraConfig] hidden_size {} is not divisible by num_attention_heads {}",
                                            hidden_size, num_attention_heads));
  if (!generator) return;
  const ElectraGeneratorSize& g = *generator;
  for (const auto& [field, v] : {std::pair{"generator.hidden_size", g.hidden_size}, {"generator.num_attention_heads", g.num_attention_heads},
                                 {"generator.intermediate_size", g.intermediate_size}, {"generator.num_hidden_layers", g.num_hidden_layers}})
    try {
      config::positive(field, v);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("[ElectraConfig] ") + e.what());
    }
  if (g.hidden_size % g.num_attention_heads != 0)
    throw std::invalid_argument(fmt::format("[ElectraConfig] generator.hidden_size {} is not divisible by "
                                            "generator.num_attention_heads {}", g.hidden_size, g.num_attention_heads));
}

nn::TransformerOptions ElectraConfig::transformer_options() const { return transformer_options_of(*this); }

BertConfig ElectraConfig::embedding_config() const {
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

ElectraConfig ElectraConfig::generator_config() const {
  if (!generator) throw std::invalid_argument("[ElectraConfig] no generator: config.json has no \"generator\" sizes");
  ElectraConfig g = *this;
  g.hidden_size = generator->hidden_size;
  g.num_attention_heads = generator->num_attention_heads;
  g.intermediate_size = generator->intermediate_size;
  g.num_hidden_layers = generator->num_hidden_layers;
  g.generator.reset();
  return g;
}

nlohmann::json ElectraConfig::to_json() const {
  nlohmann::json j = config::to_typed_json(*this);
  if (generator)
    j["generator"] = {{"hidden_size", generator->hidden_size},
                      {"num_attention_heads", generator->num_attention_heads},
                      {"intermediate_size", generator->intermediate_size},
                      {"num_hidden_layers", generator->num_hidden_layers}};
  return j;
}

ElectraConfig ElectraConfig::from_json(const nlohmann::json& j, const std::string& source) {
  ElectraConfig c = config::from_json<ElectraConfig>(j, source);
  // transformers' SequenceSummary takes a null activation as none (config::from_json keeps the default)
  if (const auto a = j.find("summary_activation"); a != j.end() && a->is_null()) c.summary_activation.clear();
  const auto it = j.find("generator");
  if (it == j.end() || it->is_null()) return c;
  if (!it->is_object()) throw std::invalid_argument(fmt::format("[ElectraConfig] {}: generator is not a JSON object", source));
  ElectraGeneratorSize g;
  for (auto [field, out] : {std::pair{"hidden_size", &g.hidden_size}, {"num_attention_heads", &g.num_attention_heads},
                            {"intermediate_size", &g.intermediate_size}, {"num_hidden_layers", &g.num_hidden_layers}}) {
    if (!it->contains(field)) throw std::invalid_argument(fmt::format("[ElectraConfig] {}: generator has no {}", source, field));
    try {
      config::read_value(it->at(field), *out);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("[ElectraConfig] {}: field generator.{} has an invalid value {} ({})", source, field,
                                              it->at(field).dump(), e.what()));
    }
  }
  c.generator = g;
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(e.what()) + " (in " + source + ")");
  }
  return c;
}

ElectraConfig ElectraConfig::from_file(const std::string& path) { return from_json(config::read_json_file(path, kName), path); }

}  // namespace xg::models
