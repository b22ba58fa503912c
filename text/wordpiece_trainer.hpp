#pragma once
// Trains a WordPiece vocabulary the way Hugging Face's WordPieceTrainer does: words come from the
// BERT normaliser and pre-tokeniser; every word starts as its characters, continuations prefixed
// "##"; the most frequent adjacent pair is merged (its "##" dropped from the right part) until the
// vocabulary reaches the requested size. Deterministic: ties go to the lexicographically smallest
// pair, and every container is iterated in sorted order.
#include <functional>
#include <string>
#include <vector>

#include "text/bert_tokenizer.hpp"

namespace xg::text {

struct WordPieceTrainerOptions {
  size_t vocab_size = 30522;
  size_t min_frequency = 2;  // pairs seen fewer times are not merged
  std::vector<std::string> special_tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  size_t limit_alphabet = 1000;  // keep the most frequent characters (0: all)
  TokenizerOptions normalization;  // lowercase / accents / CJK as the tokenizer will use them
  // Lines of the files (numbered from 1 in each) not to learn from, e.g. held-out documents; unset: none.
  std::function<bool(size_t line)> skip_line;
};

// Trains from the lines of `files` (invalid UTF-8 errors name the file and line). `progress`, if
// set, is called with (merges done, merges wanted).
Vocab train_wordpiece(const std::vector<std::string>& files, const WordPieceTrainerOptions& opt,
                      const std::function<void(size_t, size_t)>& progress = nullptr);
// Same from lines in memory.
Vocab train_wordpiece_lines(const std::vector<std::string>& lines, const WordPieceTrainerOptions& opt,
                            const std::function<void(size_t, size_t)>& progress = nullptr);

}  // namespace xg::text
