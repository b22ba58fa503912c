#pragma once
// RobertaConfig with Hugging Face's config.json field names.
#include <string>

#include <nlohmann/json.hpp>

#include "models/bert/bert_config.hpp"

namespace xg::models {

// Hugging Face's RobertaConfig fields: BERT's plus bos/eos ids; defaults are roberta-base's
// (vocab 50265, 514 positions, one token type, pad 1, layer_norm_eps 1e-5). from_json reads a
// field the file leaves out as transformers does: 512 positions, 2 token types, eps 1e-12.
struct RobertaConfig : BertConfig {
  static constexpr const char* kName = "RobertaConfig";
  static constexpr const char* kModelType = "roberta";
  int64_t bos_token_id = 0, eos_token_id = 2;
  RobertaConfig();
  template <class Self, class Visit>
  static void for_each_field(Self& self, Visit&& visit) {
    BertConfig::for_each_field(self, visit);
    visit("bos_token_id", self.bos_token_id, config::non_negative);
    visit("eos_token_id", self.eos_token_id, config::non_negative);
  }
  // BERT's shapes (tiny ... large) with RoBERTa's vocabulary and 512 + 2 positions.
  static RobertaConfig preset(const std::string& name);
  // BERT's checks, plus room in the position table for padding_idx + 1 onwards.
  void validate() const;
  nlohmann::json to_json() const;
  static RobertaConfig from_json(const nlohmann::json& j, const std::string& source = "config");
  static RobertaConfig from_file(const std::string& path);
};

}  // namespace xg::models
