#pragma once
// ALBERT's tokenizer, id for id as Hugging Face's slow AlbertTokenizer, over the SentencePiece
// library (the model file spiece.model does the segmentation; nothing of it is reimplemented):
//   preprocess_text: remove_space (strip, collapse whitespace runs to one ' '), `` and '' -> ",
//   keep_accents off (NFKD, drop combining marks), lower-casing; then the library's encoding
//   (its own normaliser from the model, unigram segmentation), then AlbertTokenizer's fix for
//   pieces ending in a digit and ',' ("9,9" -> "▁9" "," "9" rather than "▁9," "9").
// Templates [CLS] A [SEP] and [CLS] A [SEP] B [SEP] (B's type id 1). Offsets are code points in
// the original text, mapped back through the preprocessing from the library's surface spans; the
// pieces split out by the digit-comma fix share their piece's span (the ',' gets its own).
// Special tokens written inside the text ("the [MASK] sat") are matched whole, as transformers'
// added tokens; [MASK] takes the whitespace before it.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.hpp"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace xg::text {

struct SentencePieceOptions {
  bool do_lower_case = true;
  bool remove_space = true;
  bool keep_accents = false;
  size_t model_max_length = 0;  // 0: unknown
};

class SentencePieceTokenizer : public Tokenizer {
 public:
  // Loads spiece.model; throws naming the file when it is missing or not a SentencePiece model.
  explicit SentencePieceTokenizer(const std::string& model_path, SentencePieceOptions opt = {});
  // A serialized ModelProto (a spiece.model's bytes); `where` names it in errors.
  static std::unique_ptr<SentencePieceTokenizer> from_serialized(const std::string& serialized, const std::string& where,
                                                                 SentencePieceOptions opt = {});
  ~SentencePieceTokenizer() override;
  // A Hugging Face ALBERT directory: spiece.model, or else tokenizer.json alone (as transformers 5
  // saves it); tokenizer_config.json optional (do_lower_case, remove_space, keep_accents,
  // model_max_length).
  static std::unique_ptr<SentencePieceTokenizer> from_pretrained(const std::string& dir);

  std::string tokenizer_class() const override { return "AlbertTokenizer"; }
  std::vector<Token> tokenize(std::string_view text, const std::string& where = "input") const override;
  // As AlbertTokenizer.decode (clean_up_tokenization_spaces off): runs of ordinary pieces through
  // the library's decoder, special tokens kept whole (or left out).
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = true) const override;

  size_t vocab_size() const override;
  const std::string& id_to_token(int32_t id) const override;
  int32_t token_to_id(std::string_view token) const override;
  const SpecialTokens& special_tokens() const override { return special_tokens_; }
  bool is_special(int32_t id) const override;
  // Pieces beginning with U+2581 ("▁") start a word.
  bool starts_word(int32_t id) const override;
  size_t model_max_length() const override { return opt_.model_max_length; }
  // spiece.model, tokenizer.json, tokenizer_config.json and special_tokens_map.json.
  void save_pretrained(const std::string& dir) const override;

  // AlbertTokenizer.preprocess_text, with each output code point's index in the input.
  std::u32string preprocess(std::string_view text, std::vector<size_t>& origin, const std::string& where) const;

  const sentencepiece::SentencePieceProcessor& processor() const { return *sp_; }
  const SentencePieceOptions& options() const { return opt_; }

 protected:
  const SpecialTokenTemplate& special_token_template() const override { return template_; }

 private:
  struct FromBytes {};
  SentencePieceTokenizer(const std::string& serialized, const std::string& where, SentencePieceOptions opt, FromBytes);
  // The checks and tables that follow loading the model; `where` names it in errors.
  void init(const std::string& where);

  SentencePieceOptions opt_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  SpecialTokens special_tokens_;
  SpecialTokenTemplate template_;
  std::vector<bool> special_ids_, word_starts_;
  std::vector<SpecialMatch> specials_;  // longest first
  // Tokens of text with no special token in it; offsets shifted by `first` code points.
  std::vector<Token> tokenize_plain(std::string_view text, size_t first, const std::string& where) const;
};

// Trains a unigram SentencePiece model with ALBERT's settings (<pad> 0, <unk> 1, [CLS] [SEP]
// [MASK] as control symbols, no bos/eos, full character coverage) on a text file, one sentence a
// line, through the library's SentencePieceTrainer; writes the model to out_model_path.
// `case_fold`: the model's normaliser folds case (nmt_nfkc_cf), so that an uncased tokenizer's
// vocabulary holds no upper-case pieces it would never see. `skip_line`, when set, names lines
// (numbered from 1) not to learn from (held-out documents).
void train_sentencepiece(const std::string& corpus_path, size_t vocab_size, const std::string& out_model_path,
                         size_t threads = 0, bool case_fold = false,
                         const std::function<bool(size_t line)>& skip_line = nullptr);

}  // namespace xg::text
