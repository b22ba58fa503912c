#pragma once
// tokenizer.json, the tokenizers library's serialization of a whole tokenizer, which transformers 5
// saves alone (no vocab.txt, vocab.json, merges.txt or spiece.model): read for WordPiece (BERT),
// byte-level BPE (RoBERTa) and SentencePiece's Unigram (ALBERT) with the normalizer, pre-tokenizer and post-processor settings those families'
// files carry, and written as the tokenizers library writes it. Settings these tokenizers do not
// implement are refused naming the file and the field, rather than tokenized otherwise.
#include <nlohmann/json.hpp>

#include "text/bert_tokenizer.hpp"
#include "text/bpe_model.hpp"
#include "text/hf_tokenizer_files.hpp"
#include "text/roberta_tokenizer.hpp"
#include "text/sentencepiece_tokenizer.hpp"

namespace xg::text {

// The WordPiece vocabulary of c's tokenizer.json, with its BertNormalizer, pre-tokenizer, model
// and post-processor settings applied to `o` (lowercase, strip_accents, handle_chinese_chars,
// clean_text, max_input_chars_per_word, the unknown, [CLS] and [SEP] tokens).
Vocab wordpiece_from_tokenizer_json(const TokenizerConfig& c, TokenizerOptions& o);
// The byte-level BPE model of c's tokenizer.json (vocab and merges), with its ByteLevel
// pre-tokenizer and RobertaProcessing settings applied to `o`.
BpeModel byte_level_bpe_from_tokenizer_json(const TokenizerConfig& c, RobertaTokenizerOptions& o);
// ALBERT's Unigram model of c's tokenizer.json as a serialized SentencePiece ModelProto (pieces
// and scores, the unknown piece, the special pieces as control symbols, the precompiled
// character map of its Precompiled normalizer), with its Lowercase, StripAccents and
// WhitespaceSplit settings applied to `o`.
std::string unigram_model_from_tokenizer_json(const TokenizerConfig& c, SentencePieceOptions& o);

// The tokenizer.json the tokenizers library writes for these tokenizers (BertTokenizerFast's and
// RobertaTokenizerFast's).
nlohmann::json wordpiece_tokenizer_json(const BertTokenizer& tok, const TokenizerOptions& o);
nlohmann::json byte_level_bpe_tokenizer_json(const RobertaTokenizer& tok, const BpeModel& model, const RobertaTokenizerOptions& o);
nlohmann::json unigram_tokenizer_json(const SentencePieceTokenizer& tok);

// Writes `doc` to DIR/tokenizer.json, as the tokenizers library does (indent 2).
void write_tokenizer_json(const std::string& dir, const nlohmann::json& doc);

}  // namespace xg::text
