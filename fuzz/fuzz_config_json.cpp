// config.json as load_pretrained reads it: the JSON reader, then the registry (model_type,
// architectures) and the family's config fields and checks. The model itself is built only for
// small sizes: a valid config of BERT-Base's size would spend the fuzzer's time allocating.
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "models/core/config_fields.hpp"
#include "models/core/registry.hpp"

namespace {
constexpr double kMaxSize = 64;  // largest size field of a config the target builds
bool small_sizes(const nlohmann::json& j) {
  for (const char* field : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                            "max_position_embeddings", "type_vocab_size"}) {
    const auto it = j.find(field);
    if (it == j.end() || !it->is_number() || !(it->get<double>() <= kMaxSize)) return false;
  }
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = xg::fuzz::write_input("config.json", data, size);
  try {
    const nlohmann::json j = xg::models::config::read_json_file(path, "load_pretrained");
    if (j.is_object() && small_sizes(j)) xg::models::build_model(j, path);
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
