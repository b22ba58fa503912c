#include "models/core/model_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "models/core/registry.hpp"
#include "util/json_input.hpp"

namespace fs = std::filesystem;

namespace xg::models {

namespace {

bool looks_like_path(const std::string& spec) {
  return spec.find('/') != std::string::npos || fs::path(spec).extension() == ".json";
}

// A spec's family and size: "roberta-base" -> (roberta, base); "base" -> (the default family, base).
std::pair<std::string, std::string> family_and_size(const std::string& spec) {
  const size_t dash = spec.find('-');
  if (dash != std::string::npos) {
    const std::string family = spec.substr(0, dash);
    for (const auto& t : registered_model_types())
      if (t == family) return {family, spec.substr(dash + 1)};
  }
  return {default_model_type(), spec};
}

}  // namespace

nlohmann::json read_config_file(const std::string& path, const std::string& what) {
  if (!fs::is_regular_file(path)) throw std::invalid_argument(fmt::format("[model] {} {}: no such config file", what, path));
  std::ifstream in(path, std::ios::binary);
  try {
    return parse_json_bounded(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("[model] {} {}: not valid JSON: {}", what, path, e.what()));
  }
}

nlohmann::json spec_config(const std::string& spec) {
  if (looks_like_path(spec) || fs::is_regular_file(spec)) {
    nlohmann::json j = read_config_file(spec, "--model");
    if (!j.is_object()) throw std::invalid_argument(fmt::format("[model] --model {}: not a JSON object", spec));
    if (!j.contains("model_type")) j["model_type"] = default_model_type();
    return j;
  }
  const auto [family, size] = family_and_size(spec);
  nlohmann::json j = preset_config(family, size);
  j["model_type"] = family;
  return j;
}

std::string spec_model_type(const std::string& spec) {
  const nlohmann::json j = spec_config(spec);
  if (!j["model_type"].is_string()) throw std::invalid_argument(fmt::format("[model] --model {}: model_type is not a string", spec));
  return j["model_type"].get<std::string>();
}

nlohmann::json fresh_model_config(const std::string& spec, size_t vocab_size, int64_t pad_id, int64_t cls_id,
                                  int64_t sep_id, size_t seq_len) {
  nlohmann::json j = spec_config(spec);
  if (vocab_size > 0) j["vocab_size"] = vocab_size;
  if (pad_id >= 0) j["pad_token_id"] = pad_id;
  if (cls_id >= 0 && j.contains("bos_token_id")) j["bos_token_id"] = cls_id;  // RoBERTa's <s>, ALBERT's [CLS]
  if (sep_id >= 0 && j.contains("eos_token_id")) j["eos_token_id"] = sep_id;
  if (!j.contains("pad_token_id") || !j["pad_token_id"].is_number_integer())
    throw std::invalid_argument(fmt::format("[model] --model {}: no integer pad_token_id", spec));
  pad_id = j["pad_token_id"].get<int64_t>();
  // A family whose positions follow padding counts them from pad_token_id + 1: the table must
  // reach past the longest sequence.
  const size_t first = first_position(j), needed = seq_len + first;
  if (first > 0 && pad_id > 1024)
    throw std::invalid_argument(fmt::format(
        "[model] the tokenizer's pad token has id {}: model_type '{}' counts positions from pad_token_id + 1, so the "
        "position table would need {} rows. Use a vocabulary with its special tokens first (as roberta-base's: <s> 0, "
        "<pad> 1, </s> 2, <unk> 3), e.g. --train-vocab", pad_id, j["model_type"].get<std::string>(), needed));
  const size_t have = j.contains("max_position_embeddings") && j["max_position_embeddings"].is_number_unsigned()
                          ? j["max_position_embeddings"].get<size_t>() : 0;
  j["max_position_embeddings"] = std::max(have, needed);
  return j;
}

}  // namespace xg::models
