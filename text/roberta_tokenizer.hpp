#pragma once
// RoBERTa's (and GPT-2's) byte-level BPE tokenizer, token for token as Hugging Face's
// RobertaTokenizerFast (`tokenizers`: added tokens, ByteLevel pre-tokenizer, BPE, RobertaProcessing,
// ByteLevel decoder):
//   special tokens are split out of the raw text first and kept whole; <mask> takes the
//   whitespace before it along (lstrip);
//   each remaining segment gets a leading space when add_prefix_space and it has none, is split
//   by GPT-2's pattern (text/byte_level.hpp) and each pre-token's bytes are merged by rank;
//   trim_offsets leaves the spaces a token carries ("Ġworld") out of its offsets;
//   templates <s> A </s> and <s> A </s></s> B </s>, every type id 0.
// Offsets are code-point positions [start, end) in the original text; a token holding part of a
// character's bytes spans that whole character.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/bpe_model.hpp"
#include "text/tokenizer.hpp"
#include "text/unicode.hpp"

namespace xg::text {

struct RobertaTokenizerOptions {
  bool add_prefix_space = false;
  bool trim_offsets = true;
  bool mask_lstrip = true;      // <mask> absorbs the whitespace before it, as RoBERTa's AddedToken
  size_t model_max_length = 0;  // 0: unknown
  InvalidUtf8 invalid_utf8 = InvalidUtf8::Error;
  std::string bos_token = "<s>", eos_token = "</s>", sep_token = "</s>", cls_token = "<s>", unk_token = "<unk>",
              pad_token = "<pad>", mask_token = "<mask>";
};

class RobertaTokenizer : public Tokenizer {
 public:
  // Special tokens the vocabulary lacks are appended (bos, eos, unk, sep, pad, cls, mask order,
  // as transformers adds them: GPT-2's files give <s>=50257 ... <mask>=50261).
  explicit RobertaTokenizer(BpeModel model, RobertaTokenizerOptions opt = {});
  static RobertaTokenizer from_files(const std::string& vocab_json, const std::string& merges_txt,
                                     RobertaTokenizerOptions opt = {});
  // Reads a Hugging Face tokenizer directory: vocab.json, merges.txt, tokenizer_config.json
  // (add_prefix_space, trim_offsets, model_max_length, special tokens, added_tokens_decoder) and
  // special_tokens_map.json, either JSON file optional. Throws naming the file and field.
  static RobertaTokenizer from_pretrained(const std::string& dir);

  std::string tokenizer_class() const override { return "RobertaTokenizer"; }
  std::vector<Token> tokenize(std::string_view text, const std::string& where = "input") const override;
  // The bytes of the tokens, invalid UTF-8 replaced by U+FFFD (never throws for ids in the
  // vocabulary, whatever their order).
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const override;

  size_t vocab_size() const override { return model_.vocab().size(); }
  const std::string& id_to_token(int32_t id) const override;
  int32_t token_to_id(std::string_view token) const override { return model_.vocab().id(token); }
  const SpecialTokens& special_tokens() const override { return special_tokens_; }
  bool is_special(int32_t id) const override;
  // "Ġ" (a leading space) starts a word, as does a token opening with ASCII punctuation, a
  // control or whitespace byte; a letter, digit or non-ASCII byte continues the word before it.
  bool starts_word(int32_t id) const override;
  size_t model_max_length() const override { return opt_.model_max_length; }
  // vocab.json, merges.txt, tokenizer_config.json and special_tokens_map.json, as transformers'
  // RobertaTokenizerFast.save_pretrained writes them.
  void save_pretrained(const std::string& dir) const override;

  // Tokens matched whole in the raw text (appended to the vocabulary if new).
  void add_special_tokens(const std::vector<std::string>& tokens);

  const BpeModel& model() const { return model_; }
  const RobertaTokenizerOptions& options() const { return opt_; }

 protected:
  const SpecialTokenTemplate& special_token_template() const override { return template_; }

 private:
  using Special = SpecialMatch;
  bool add_special(const std::string& token, bool lstrip);
  void encode_segment(const std::vector<char32_t>& cps, const std::string& utf8, const std::vector<size_t>& byte_at,
                      size_t begin, size_t end, std::vector<Token>& out) const;

  BpeModel model_;
  RobertaTokenizerOptions opt_;
  SpecialTokens special_tokens_;
  SpecialTokenTemplate template_;
  std::vector<Special> specials_;  // longest first
  std::vector<bool> special_ids_;
  std::vector<std::string> bytes_of_;         // what each id decodes to
  std::vector<std::pair<uint32_t, uint32_t>> spaces_;  // leading and trailing spaces of each token
};

}  // namespace xg::text
