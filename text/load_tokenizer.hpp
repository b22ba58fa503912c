#pragma once
// Building the right tokenizer from what a user or a checkpoint has: a Hugging Face tokenizer
// directory, or a bare WordPiece vocabulary file.
#include <functional>
#include <memory>
#include <string>

#include "text/bert_tokenizer.hpp"
#include "text/tokenizer.hpp"

namespace xg::text {

// The tokenizer class of a model family by config.json's model_type ("" for none): what a
// directory whose tokenizer_config.json names no class gets (as AutoTokenizer's mapping).
// models::load_tokenizer passes the family registry's.
using ClassOfModelType = std::function<std::string(const std::string& model_type)>;

// The tokenizer of a Hugging Face directory: the class named by tokenizer_config.json's
// tokenizer_class, or, when that is absent, `class_of_model_type` of config.json's model_type.
// Throws naming the file and field for a missing or malformed file or an unsupported class.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, const ClassOfModelType& class_of_model_type = {});

// What the programs' --vocab flag names: a tokenizer directory (load_tokenizer; its files decide
// casing; bare vocab.json + merges.txt are RoBERTa's), a byte-level BPE vocab.json with merges.txt
// beside it (or NAMEvocab.json with NAMEmerges.txt), a SentencePiece NAME.model (ALBERT's; cased
// per wordpiece.lowercase), or a WordPiece vocab.txt read with `wordpiece` options.
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, const TokenizerOptions& wordpiece = {},
                                          const ClassOfModelType& class_of_model_type = {});

}  // namespace xg::text
