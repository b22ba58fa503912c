#pragma once
// BERT's tokenizer, token for token as Hugging Face's BertTokenizer / `tokenizers` pipeline
// (BertNormalizer, BertPreTokenizer, WordPiece, BertProcessing):
//   special tokens are split out of the raw text first and kept whole;
//   normalisation: drop NUL, U+FFFD and control characters, map whitespace to ' ', put spaces
//   around CJK ideographs, and when uncased strip accents (NFD, drop Mn) and lower-case;
//   pre-tokenisation: split on whitespace and around every punctuation character;
//   WordPiece: greedy longest-match-first with "##" continuations; a word longer than
//   max_input_chars_per_word, or with no complete match, becomes [UNK].
// Offsets are code-point positions [start, end) in the original text.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/tokenizer.hpp"
#include "text/unicode.hpp"
#include "text/vocab.hpp"

namespace xg::text {

struct TokenizerOptions {
  bool lowercase = true;
  std::optional<bool> strip_accents;  // unset: follows lowercase, as Hugging Face
  bool clean_text = true;
  bool handle_chinese_chars = true;
  size_t max_input_chars_per_word = 100;
  size_t model_max_length = 0;  // tokenizer_config.json's model_max_length; 0: unknown
  // decode() also applies transformers' clean_up_tokenization to the whole text ("isn ' t" ->
  // "isn't"); off, decode() is the `tokenizers` WordPiece decoder alone.
  bool clean_up_tokenization_spaces = false;
  InvalidUtf8 invalid_utf8 = InvalidUtf8::Error;
  std::string unk_token = "[UNK]", cls_token = "[CLS]", sep_token = "[SEP]", pad_token = "[PAD]",
              mask_token = "[MASK]";
};

class BertTokenizer : public Tokenizer {
 public:
  explicit BertTokenizer(Vocab vocab, TokenizerOptions opt = {});
  static BertTokenizer from_file(const std::string& vocab_path, TokenizerOptions opt = {});
  // Reads a Hugging Face tokenizer directory: vocab.txt, tokenizer_config.json (do_lower_case,
  // strip_accents, tokenize_chinese_chars, model_max_length, special tokens) and
  // special_tokens_map.json, either JSON file optional. Throws naming the file and field.
  static BertTokenizer from_pretrained(const std::string& dir);

  std::string tokenizer_class() const override { return "BertTokenizer"; }
  // Word pieces of one text (no [CLS]/[SEP]). `where` names the text in errors ("line 12").
  std::vector<Token> tokenize(std::string_view text, const std::string& where = "input") const override;
  // Hugging Face's WordPiece decoder: joins pieces, glues "##" continuations, cleans up spaces
  // before punctuation and contractions (then the whole text, per clean_up_tokenization_spaces).
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const override;

  size_t vocab_size() const override { return vocab_.size(); }
  const std::string& id_to_token(int32_t id) const override;
  int32_t token_to_id(std::string_view token) const override { return vocab_.id(token); }
  const SpecialTokens& special_tokens() const override { return special_tokens_; }
  bool is_special(int32_t id) const override;
  // Every piece but a "##" continuation starts a word.
  bool starts_word(int32_t id) const override;
  size_t model_max_length() const override { return opt_.model_max_length; }
  // vocab.txt (added tokens included), tokenizer_config.json and special_tokens_map.json, as
  // transformers' BertTokenizerFast.save_pretrained writes them.
  void save_pretrained(const std::string& dir) const override;

  // Tokens matched whole in the raw text before normalisation (added to the vocabulary if new).
  void add_special_tokens(const std::vector<std::string>& tokens);
  // Appends ordinary tokens (whole words, or "##" continuations) after the last id, so every
  // existing id keeps its meaning; throws naming a token already in the vocabulary.
  void append_tokens(const std::vector<std::string>& tokens);
  // The normalised, pre-tokenised words of a text (what the WordPiece model sees).
  std::vector<std::u32string> words(std::string_view text, const std::string& where = "input") const;

  const Vocab& vocab() const { return vocab_; }
  const TokenizerOptions& options() const { return opt_; }

 protected:
  const SpecialTokenTemplate& special_token_template() const override { return template_; }

 private:
  struct Word {
    std::u32string chars;
    std::vector<uint32_t> origin;  // original code-point index of each char
  };
  void split_words(const std::vector<char32_t>& cps, size_t begin, size_t end, std::vector<Word>& out) const;
  void wordpiece(const Word& w, std::vector<Token>& out) const;
  // Makes `token` match whole; returns false when it already did.
  bool add_special(const std::string& token);

  Vocab vocab_;
  TokenizerOptions opt_;
  SpecialTokens special_tokens_;
  SpecialTokenTemplate template_;
  std::vector<SpecialMatch> specials_;  // longest first
  std::vector<bool> special_ids_;
  int32_t unk_id_;
};

}  // namespace xg::text
