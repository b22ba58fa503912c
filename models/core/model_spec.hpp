#pragma once
// What a program's --model names when it builds a fresh model: a "[family-]size" preset
// ("base", "roberta-tiny", "albert-base") or a config.json path. A checkpoint directory is
// models/core/checkpoint.hpp's.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace xg::models {

// A JSON config file read with bounded nesting; `what` names where the path came from in errors
// ("--model", "resume").
nlohmann::json read_config_file(const std::string& path, const std::string& what);

// The config.json `spec` names, before sizing: a config file's (model_type defaulting to the
// default family's) or a preset's.
nlohmann::json spec_config(const std::string& spec);

// The model_type of spec_config(spec).
std::string spec_model_type(const std::string& spec);

// The config.json of a fresh model: spec_config(spec) sized for a tokenizer (vocab_size 0 and
// ids < 0 keep the config's) and the longest sequence: the position table reaches seq_len past the
// family's first position.
nlohmann::json fresh_model_config(const std::string& spec, size_t vocab_size, int64_t pad_id, int64_t cls_id,
                                  int64_t sep_id, size_t seq_len);

}  // namespace xg::models
