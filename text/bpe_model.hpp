#pragma once
// A byte-level BPE model as Hugging Face's `BPE` (no dropout, no unknown token, no affixes): a
// vocabulary of byte-level strings and ranked merges. A pre-token's bytes start as one symbol per
// byte; the adjacent pair of lowest rank is merged (the leftmost among equals) until no pair has a
// merge. Results of frequent pre-tokens are cached.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/vocab.hpp"

namespace xg::text {

using Merge = std::pair<std::string, std::string>;

class BpeModel {
 public:
  // `vocab`: byte-level tokens by id; `merges` in rank order. Throws naming `where` for a merge
  // whose parts or result are not in the vocabulary, and for a vocabulary lacking a byte.
  BpeModel(Vocab vocab, std::vector<Merge> merges, const std::string& where = "merges");
  // Reads vocab.json ({"token": id, ...}, ids 0..n-1 each once) and merges.txt ("a b" per line,
  // an optional "#version" first line). Throws naming the file and line or token.
  static BpeModel from_files(const std::string& vocab_json, const std::string& merges_txt);
  BpeModel(BpeModel&&) noexcept;
  BpeModel& operator=(BpeModel&&) noexcept;
  ~BpeModel();

  // Writes vocab.json (ids in order, compact) and merges.txt ("#version: 0.2" first), as Hugging
  // Face's BPE model saves them.
  void save(const std::string& dir) const;

  // Appends (id, byte length) for each token of one pre-token, given as its raw bytes.
  void encode_word(std::string_view bytes, std::vector<std::pair<int32_t, uint32_t>>& out) const;

  const Vocab& vocab() const { return vocab_; }
  // For appending added tokens (special tokens past the BPE vocabulary); merges never use them.
  Vocab& vocab() { return vocab_; }
  const std::vector<Merge>& merges() const { return merges_; }

 private:
  struct Cache;
  void merge(std::string_view bytes, std::vector<std::pair<int32_t, uint32_t>>& out) const;

  Vocab vocab_;
  std::vector<Merge> merges_;
  std::array<int32_t, 256> byte_id_;  // the token of each byte's stand-in
  std::unique_ptr<struct MergeTable> table_;
  std::unique_ptr<Cache> cache_;
};

}  // namespace xg::text
