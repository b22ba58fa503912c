#pragma once
// Tokenizers as a model family's checkpoint has them: text::load_tokenizer and open_tokenizer
// with the family registry's answer for a directory whose tokenizer_config.json names no class
// (the tokenizer class of config.json's model_type, FamilyEntry::tokenizer).
#include <memory>
#include <string>

#include "text/load_tokenizer.hpp"

namespace xg::models {

// The tokenizer class of a registered family ("BertTokenizer"), or "" for an unknown model_type.
std::string tokenizer_class_of(const std::string& model_type);

std::unique_ptr<text::Tokenizer> load_tokenizer(const std::string& dir);
std::unique_ptr<text::Tokenizer> open_tokenizer(const std::string& path, const text::TokenizerOptions& wordpiece = {});

}  // namespace xg::models
