#pragma once
// Trains a byte-level BPE vocabulary the way Hugging Face's BpeTrainer does behind a ByteLevel
// pre-tokenizer (ByteLevelBPETokenizer.train): texts are split by GPT-2's pattern and mapped to
// byte stand-ins; the vocabulary starts as the special tokens, then the 256 stand-ins in code-point
// order; the most frequent adjacent pair is merged (ties: the pair of smallest ids) until the
// vocabulary has vocab_size tokens or no pair is seen min_frequency times. Same vocab.json and
// merges.txt as Hugging Face's on the same text and settings.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "text/bpe_model.hpp"

namespace xg::text {

struct BpeTrainerOptions {
  size_t vocab_size = 30000;        // special tokens and the 256 byte stand-ins included
  uint64_t min_frequency = 0;       // pairs seen fewer times are not merged
  std::vector<std::string> special_tokens = {"<s>", "<pad>", "</s>", "<unk>", "<mask>"};
  bool add_prefix_space = false;    // the ByteLevel pre-tokenizer's option
};

class BpeTrainer {
 public:
  explicit BpeTrainer(BpeTrainerOptions opt = {});
  // Counts the pre-tokens of one text (a line with its ending, as Hugging Face feeds files).
  // Invalid UTF-8 throws naming `where`.
  void feed(std::string_view text, const std::string& where = "input");
  // Feeds every line of a file, "\n" (and "\r") kept, as Hugging Face's train(files) reads it,
  // except the lines (numbered from 1) `skip_line` names, when set (held-out documents).
  void feed_file(const std::string& path, const std::function<bool(size_t line)>& skip_line = nullptr);
  // The merges and vocabulary. `progress`, if set, is called with (vocabulary size, wanted).
  BpeModel train(const std::function<void(size_t, size_t)>& progress = nullptr) const;

 private:
  BpeTrainerOptions opt_;
  std::map<std::string, uint64_t> word_counts_;  // raw bytes of each pre-token
};

}  // namespace xg::text
