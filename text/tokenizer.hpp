#pragma once
// The tokenizer interface every family implements (WordPiece now; byte-level BPE and
// SentencePiece next), and the encoding pipeline they share, as Hugging Face's `tokenizers` runs
// it: tokenize each text, truncate, place the special tokens (a per-family template), pad.
// Offsets are code-point positions [start, end) in the original text.
// A new family (byte-level BPE, SentencePiece) implements the pure virtual functions below and
// registers its tokenizer_class (and config.json model_type) in text/load_tokenizer.cpp.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xg::text {

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

// One window of a pair cut by Tokenizer::encode_pair_windows: the encoding, and the token
// positions [second_begin, second_end) of the second text's tokens in it.
struct PairWindow {
  Encoding encoding;
  size_t second_begin = 0, second_end = 0;
};

// Special tokens by the role Hugging Face's special_tokens_map.json gives them; "" where a family
// has none. BERT: [UNK] [CLS] [SEP] [PAD] [MASK]; RoBERTa: <unk>, cls = bos = <s>, sep = eos = </s>,
// <pad>, <mask>; ALBERT: <unk> [CLS] [SEP] <pad> [MASK].
struct SpecialTokens {
  std::string unk, cls, sep, pad, mask, bos, eos;
  std::vector<std::string> additional;  // user-added tokens, matched whole like the others
};

// Where the special tokens go around one text or a pair, as Hugging Face's post-processors place
// them. BERT: [CLS] $A [SEP] and [CLS] $A [SEP] $B:1 [SEP]:1; RoBERTa: <s> $A </s> and
// <s> $A </s> </s> $B </s>.
struct SpecialTokenTemplate {
  static constexpr int32_t kFirstText = -1, kSecondText = -2;
  struct Piece {
    int32_t id;       // a special token's id, or kFirstText / kSecondText for a text's tokens
    int32_t type_id;  // token type of this piece (of every token of the text for a text piece)
  };
  std::vector<Piece> single, pair;
  // How many special tokens encoding adds: the room truncation must leave for them.
  size_t added(bool is_pair) const;
};

// A special token matched whole in raw text, as transformers' added-tokens trie matches it;
// `lstrip`: it takes the whitespace before it (RoBERTa's <mask>, ALBERT's [MASK]).
struct SpecialMatch {
  std::u32string content;
  int32_t id;
  bool lstrip = false;
};
// The first of `specials` (sorted longest first) whose text starts at cps[i]; null when none.
const SpecialMatch* special_at(const std::vector<char32_t>& cps, size_t i, const std::vector<SpecialMatch>& specials);

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The class Hugging Face knows this tokenizer by (tokenizer_config.json's tokenizer_class).
  virtual std::string tokenizer_class() const = 0;

  // Tokens of one text, without special tokens around it. `where` names the text in errors.
  virtual std::vector<Token> tokenize(std::string_view text, const std::string& where = "input") const = 0;
  // The text of ids; special tokens are left out when asked.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const = 0;

  // One text or a pair with special tokens, type ids, truncation and padding per `opt`.
  Encoding encode(std::string_view a, const EncodeOptions& opt = {}) const;
  Encoding encode_pair(std::string_view a, std::string_view b, const EncodeOptions& opt = {}) const;
  // Tokens `a` whole with tokens `b` cut into windows overlapping by `stride` tokens, each encoding
  // at most `max_length` tokens, as transformers' tokenizer(a, b, truncation="only_second",
  // stride=..., return_overflowing_tokens=True) cuts them (extractive QA's document stride). Throws
  // when `a` leaves no room for `b`, or when `b` needs several windows and `stride` is not smaller
  // than the room left for it.
  std::vector<PairWindow> encode_pair_windows(std::vector<Token> a, const std::vector<Token>& b, size_t max_length,
                                              size_t stride) const;
  // Encodes texts on `threads` threads (0: default_thread_count()); pads per pad_to / pad_to_longest.
  std::vector<Encoding> encode_batch(const std::vector<std::string>& texts, const EncodeOptions& opt = {},
                                     size_t threads = 0) const;

  virtual size_t vocab_size() const = 0;
  // Throws naming the id when it is outside the vocabulary.
  virtual const std::string& id_to_token(int32_t id) const = 0;
  // -1 when absent.
  virtual int32_t token_to_id(std::string_view token) const = 0;

  virtual const SpecialTokens& special_tokens() const = 0;
  virtual bool is_special(int32_t id) const = 0;
  // Ids of the special tokens by role; throw naming the role when this tokenizer has none.
  int32_t unk_id() const;
  int32_t cls_id() const;
  int32_t sep_id() const;
  int32_t pad_id() const;
  int32_t mask_id() const;

  // Whether token `id` begins a new word when it follows another token of the same text: whole-word
  // masking keeps the pieces of a word together. WordPiece marks continuations ("##ing"), byte-level
  // BPE and SentencePiece mark word starts ("Ġthe", "▁the"). A token right after a special token
  // always begins a word, whatever this says.
  virtual bool starts_word(int32_t id) const = 0;

  // Longest input the model this tokenizer belongs to accepts; 0 when unknown.
  virtual size_t model_max_length() const = 0;

  // Writes the files Hugging Face's save_pretrained writes for this family (vocab.txt,
  // tokenizer_config.json, special_tokens_map.json for WordPiece) into `dir`, creating it.
  virtual void save_pretrained(const std::string& dir) const = 0;

 protected:
  virtual const SpecialTokenTemplate& special_token_template() const = 0;

 private:
  Encoding assemble(std::vector<Token> a, std::vector<Token>* b, const EncodeOptions& opt) const;
  void pad(Encoding& e, size_t length) const;
  int32_t required_id(const std::string& token, const char* role) const;
};

}  // namespace xg::text
