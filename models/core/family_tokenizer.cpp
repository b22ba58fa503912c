#include "models/core/family_tokenizer.hpp"

#include "models/core/registry.hpp"

namespace xg::models {

std::string tokenizer_class_of(const std::string& model_type) {
  for (const auto& t : registered_model_types())
    if (t == model_type) return family_entry(t).tokenizer.tokenizer_class;
  return "";
}

std::unique_ptr<text::Tokenizer> load_tokenizer(const std::string& dir) { return text::load_tokenizer(dir, tokenizer_class_of); }

std::unique_ptr<text::Tokenizer> open_tokenizer(const std::string& path, const text::TokenizerOptions& wordpiece) {
  return text::open_tokenizer(path, wordpiece, tokenizer_class_of);
}

}  // namespace xg::models
