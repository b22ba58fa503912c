#pragma once
// Building the right tokenizer from what a user or a checkpoint has: a Hugging Face tokenizer
// directory, or a bare WordPiece vocabulary file.
#include <memory>
#include <string>

#include "text/bert_tokenizer.hpp"
#include "text/tokenizer.hpp"

namespace xg::text {

// The tokenizer of a Hugging Face directory: the class named by tokenizer_config.json's
// tokenizer_class, or, when that is absent, by config.json's model_type (as AutoTokenizer does).
// Throws naming the file and field for a missing or malformed file or an unsupported class.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);

// What the programs' --vocab flag names: a tokenizer directory (load_tokenizer; its files decide
// casing; bare vocab.json + merges.txt are RoBERTa's), a byte-level BPE vocab.json with merges.txt
// beside it (or NAMEvocab.json with NAMEmerges.txt), a SentencePiece NAME.model (ALBERT's; cased
// per wordpiece.lowercase), or a WordPiece vocab.txt read with `wordpiece` options.
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, const TokenizerOptions& wordpiece = {});

}  // namespace xg::text
