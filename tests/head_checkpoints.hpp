#pragma once
// The tiny checkpoints of tests/data/heads (tools/gen_head_goldens.py) as the inference tests use
// them: by name, and the token classifier with IOB2 labels (its checkpoint has LABEL_i, which no
// entity can be read from).
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/temp_path.hpp"

namespace xg::test {

inline const std::string kHeads = std::string(XGRAD_TEST_DATA_DIR) + "/heads/";

// tests/data/heads/<name>; "token" is a copy with O, B-PER, I-PER, B-LOC, I-LOC as its labels.
inline std::string head_checkpoint(const std::string& name) {
  if (name != "token") return kHeads + name;
  const std::filesystem::path dir = temp_path("xgrad_heads_token_iob2");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kHeads + "token/model.safetensors", dir / "model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  auto config = nlohmann::json::parse(std::ifstream(kHeads + "token/config.json"));
  config["id2label"] = {{"0", "O"}, {"1", "B-PER"}, {"2", "I-PER"}, {"3", "B-LOC"}, {"4", "I-LOC"}};
  config.erase("label2id");
  std::ofstream(dir / "config.json") << config.dump();
  return dir.string();
}

}  // namespace xg::test
