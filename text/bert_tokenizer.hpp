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
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/unicode.hpp"
#include "text/vocab.hpp"

namespace xg::text {

struct TokenizerOptions {
  bool lowercase = true;
  std::optional<bool> strip_accents;  // unset: follows lowercase, as Hugging Face
  bool clean_text = true;
  bool handle_chinese_chars = true;
  size_t max_input_chars_per_word = 100;
  InvalidUtf8 invalid_utf8 = InvalidUtf8::Error;
  std::string unk_token = "[UNK]", cls_token = "[CLS]", sep_token = "[SEP]", pad_token = "[PAD]",
              mask_token = "[MASK]";
};

enum class Truncation { LongestFirst, OnlyFirst, OnlySecond };

struct EncodeOptions {
  bool add_special_tokens = true;
  size_t max_length = 0;  // 0: no truncation
  Truncation truncation = Truncation::LongestFirst;
  size_t pad_to = 0;      // pad on the right up to this length (0: no padding)
  bool pad_to_longest = false;  // encode_batch: pad every encoding to the batch's longest
};

struct Token {
  int32_t id;
  size_t start, end;  // code points in the original text
};

struct Encoding {
  std::vector<int32_t> ids, type_ids, attention_mask, special_tokens_mask;
  std::vector<std::pair<size_t, size_t>> offsets;
  size_t size() const { return ids.size(); }
};

class BertTokenizer {
 public:
  explicit BertTokenizer(Vocab vocab, TokenizerOptions opt = {});
  static BertTokenizer from_file(const std::string& vocab_path, TokenizerOptions opt = {});

  // Word pieces of one text (no [CLS]/[SEP]). `where` names the text in errors ("line 12").
  std::vector<Token> tokenize(std::string_view text, const std::string& where = "input") const;
  // [CLS] a [SEP] (b [SEP]) with type ids, truncation and padding per `opt`.
  Encoding encode(std::string_view a, const EncodeOptions& opt = {}) const;
  Encoding encode_pair(std::string_view a, std::string_view b, const EncodeOptions& opt = {}) const;
  // Encodes texts on `threads` threads (0: all cores); pads per pad_to / pad_to_longest.
  std::vector<Encoding> encode_batch(const std::vector<std::string>& texts, const EncodeOptions& opt = {},
                                     size_t threads = 0) const;
  // Hugging Face's WordPiece decoder: joins pieces, glues "##" continuations, cleans up spaces
  // before punctuation and contractions.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const;

  // Tokens matched whole in the raw text before normalisation (added to the vocabulary if new).
  void add_special_tokens(const std::vector<std::string>& tokens);
  bool is_special(int32_t id) const;
  // The normalised, pre-tokenised words of a text (what the WordPiece model sees).
  std::vector<std::u32string> words(std::string_view text, const std::string& where = "input") const;

  const Vocab& vocab() const { return vocab_; }
  const TokenizerOptions& options() const { return opt_; }
  int32_t unk_id() const { return unk_id_; }
  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t mask_id() const { return mask_id_; }

 private:
  struct Word {
    std::u32string chars;
    std::vector<uint32_t> origin;  // original code-point index of each char
  };
  void split_words(const std::vector<char32_t>& cps, size_t begin, size_t end, std::vector<Word>& out) const;
  void wordpiece(const Word& w, std::vector<Token>& out) const;
  Encoding assemble(std::vector<Token> a, std::vector<Token>* b, const EncodeOptions& opt) const;

  Vocab vocab_;
  TokenizerOptions opt_;
  std::vector<std::pair<std::u32string, int32_t>> specials_;  // longest first
  std::vector<bool> special_ids_;
  int32_t unk_id_, cls_id_, sep_id_, pad_id_, mask_id_;
};

}  // namespace xg::text
