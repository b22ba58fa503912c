// RobertaTokenizer in and out of Hugging Face tokenizer directories.
#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "text/hf_tokenizer_files.hpp"
#include "text/tokenizer_json.hpp"
#include "text/roberta_tokenizer.hpp"

namespace xg::text {

RobertaTokenizer RobertaTokenizer::from_pretrained(const std::string& dir) {
  const TokenizerConfig c = TokenizerConfig::read(dir);
  // vocab.json and merges.txt, or else tokenizer.json alone (as transformers 5 saves a tokenizer)
  const bool from_json = !std::filesystem::exists(std::filesystem::path(dir) / "vocab.json") &&
                         !std::filesystem::exists(std::filesystem::path(dir) / "merges.txt") && c.tokenizer_json();
  const std::string vocab = from_json ? "" : c.required_file("vocab.json", "RobertaTokenizer");
  const std::string merges = from_json ? "" : c.required_file("merges.txt", "RobertaTokenizer");
  RobertaTokenizerOptions o;
  o.add_prefix_space = c.get_bool("add_prefix_space").value_or(false);
  o.trim_offsets = c.get_bool("trim_offsets").value_or(true);
  o.model_max_length = c.get_size("model_max_length").value_or(0);
  for (auto [key, token] : {std::pair{"bos_token", &o.bos_token}, {"eos_token", &o.eos_token}, {"unk_token", &o.unk_token},
                            {"sep_token", &o.sep_token}, {"pad_token", &o.pad_token}, {"cls_token", &o.cls_token},
                            {"mask_token", &o.mask_token}})
    if (auto t = c.special_token(key)) *token = *t;
  BpeModel model = from_json ? byte_level_bpe_from_tokenizer_json(c, o) : BpeModel::from_files(vocab, merges);
  const std::vector<std::string> added = c.merge_added_tokens(model.vocab(), o.mask_token);  // no normalizer
  // transformers makes <mask> lstrip unless added_tokens_decoder says otherwise.
  for (const auto& t : c.added_tokens())
    if (t.content == o.mask_token) o.mask_lstrip = t.lstrip;
  try {
    RobertaTokenizer tok(std::move(model), o);
    tok.add_special_tokens(added);
    tok.add_special_tokens(c.additional_special_tokens());
    return tok;
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("[load_tokenizer] {}: {}", dir, e.what()));
  }
}

void RobertaTokenizer::save_pretrained(const std::string& dir) const {
  std::filesystem::create_directories(dir);
  // vocab.json holds the BPE vocabulary and the special tokens past it alike, as the
  // slow tokenizer's files do; added_tokens_decoder repeats the special ones.
  model_.save(dir);
  nlohmann::json fields = {{"add_prefix_space", opt_.add_prefix_space},
                           {"trim_offsets", opt_.trim_offsets},
                           {"errors", "replace"},
                           {"clean_up_tokenization_spaces", false}};
  write_tokenizer_config(dir, *this, std::move(fields), opt_.mask_lstrip ? std::vector<std::string>{opt_.mask_token} : std::vector<std::string>{});
  write_tokenizer_json(dir, byte_level_bpe_tokenizer_json(*this, model_, opt_));
}

}  // namespace xg::text
