// BertTokenizer in and out of Hugging Face tokenizer directories.
#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "text/bert_tokenizer.hpp"
#include "text/hf_tokenizer_files.hpp"
#include "text/tokenizer_json.hpp"

namespace xg::text {

BertTokenizer BertTokenizer::from_pretrained(const std::string& dir) {
  const TokenizerConfig c = TokenizerConfig::read(dir);
  // vocab.txt, or else tokenizer.json alone (as transformers 5 saves a tokenizer)
  const bool from_json = !std::filesystem::exists(std::filesystem::path(dir) / "vocab.txt") && c.tokenizer_json();
  const std::string vocab = from_json ? "" : c.required_file("vocab.txt", "BertTokenizer");
  TokenizerOptions o;
  if (!c.get_bool("do_basic_tokenize").value_or(true))
    throw std::runtime_error(fmt::format("[load_tokenizer] {}/tokenizer_config.json: do_basic_tokenize false is not supported", dir));
  o.lowercase = c.get_bool("do_lower_case").value_or(true);
  o.strip_accents = c.get_bool("strip_accents");
  o.handle_chinese_chars = c.get_bool("tokenize_chinese_chars").value_or(true);
  o.model_max_length = c.get_size("model_max_length").value_or(0);
  o.clean_up_tokenization_spaces = c.get_bool("clean_up_tokenization_spaces").value_or(true);  // transformers' default for BERT
  for (auto [key, token] : {std::pair{"unk_token", &o.unk_token}, {"cls_token", &o.cls_token}, {"sep_token", &o.sep_token},
                            {"pad_token", &o.pad_token}, {"mask_token", &o.mask_token}})
    if (auto t = c.special_token(key)) *token = *t;
  Vocab v = from_json ? wordpiece_from_tokenizer_json(c, o) : Vocab::from_file(vocab);
  const bool normalizes = o.lowercase || o.strip_accents.value_or(false);  // a token's case or accents then differ
  const std::vector<std::string> added = c.merge_added_tokens(v, "", normalizes);
  try {
    BertTokenizer tok(std::move(v), o);
    tok.add_special_tokens(added);
    tok.add_special_tokens(c.additional_special_tokens());
    return tok;
  } catch (const std::invalid_argument& e) {  // a special token the vocabulary lacks
    throw std::runtime_error(fmt::format("[load_tokenizer] {}: {}", dir, e.what()));
  }
}

void BertTokenizer::save_pretrained(const std::string& dir) const {
  std::filesystem::create_directories(dir);
  vocab_.save((std::filesystem::path(dir) / "vocab.txt").string());
  nlohmann::json fields = {{"do_lower_case", opt_.lowercase},
                           {"do_basic_tokenize", true},
                           {"never_split", nullptr},
                           {"tokenize_chinese_chars", opt_.handle_chinese_chars},
                           {"strip_accents", nullptr},
                           {"clean_up_tokenization_spaces", opt_.clean_up_tokenization_spaces}};
  if (opt_.strip_accents) fields["strip_accents"] = *opt_.strip_accents;
  write_tokenizer_config(dir, *this, std::move(fields));
  write_tokenizer_json(dir, wordpiece_tokenizer_json(*this, opt_));
}

}  // namespace xg::text
