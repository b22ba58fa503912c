#include "text/bpe_trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "text/byte_level.hpp"
#include "text/unicode.hpp"

namespace xg::text {

BpeTrainer::BpeTrainer(BpeTrainerOptions opt) : opt_(std::move(opt)) {}

void BpeTrainer::feed(std::string_view text, const std::string& where) {
  std::vector<char32_t> cps = decode_utf8(text, InvalidUtf8::Error, where);
  if (opt_.add_prefix_space && !cps.empty() && cps[0] != ' ') cps.insert(cps.begin(), ' ');
  std::vector<std::pair<size_t, size_t>> pieces;
  split_gpt2(cps, 0, cps.size(), pieces);
  std::string bytes;
  for (const auto& [a, b] : pieces) {
    bytes.clear();
    for (size_t i = a; i < b; ++i) append_utf8(bytes, cps[i]);
    ++word_counts_[bytes];
  }
}

void BpeTrainer::feed_file(const std::string& path, const std::function<bool(size_t line)>& skip_line) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("[BpeTrainer] {}: cannot open", path));
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (skip_line && skip_line(n)) continue;
    if (!in.eof()) line.push_back('\n');  // the last line has an ending only if the file does
    feed(line, fmt::format("{}:{}", path, n));
  }
}

namespace {
using Pair = std::pair<int32_t, int32_t>;
struct PairHash {
  size_t operator()(const Pair& p) const { return std::hash<uint64_t>()(uint64_t(uint32_t(p.first)) << 32 | uint32_t(p.second)); }
};

// A queue entry as Hugging Face's: the pair, its count when queued, and the words to merge it in.
struct Candidate {
  int64_t count;
  Pair pair;
  std::vector<uint32_t> words;
  bool operator<(const Candidate& o) const { return count != o.count ? count < o.count : pair > o.pair; }
};

// Merges every (a, b) in `word` into `merged`, left to right, and reports the pairs that went
// away (-1) and appeared (+1) around each merge, as Hugging Face's Word::merge.
void merge_word(std::vector<int32_t>& word, int32_t a, int32_t b, int32_t merged, std::vector<std::pair<Pair, int>>& changes) {
  for (size_t i = 0; i + 1 < word.size(); ++i) {
    if (word[i] != a || word[i + 1] != b) continue;
    if (i > 0) {
      changes.push_back({{word[i - 1], a}, -1});
      changes.push_back({{word[i - 1], merged}, 1});
    }
    word[i] = merged;
    word.erase(word.begin() + long(i) + 1);
    if (i + 1 < word.size()) {
      changes.push_back({{b, word[i + 1]}, -1});
      changes.push_back({{merged, word[i + 1]}, 1});
    }
  }
}
}  // namespace

BpeModel BpeTrainer::train(const std::function<void(size_t, size_t)>& progress) const {
  Vocab vocab;
  for (const auto& t : opt_.special_tokens) vocab.add(t);
  // The initial alphabet: all 256 stand-ins, in code-point order.
  std::vector<std::pair<char32_t, int>> alphabet;
  for (int b = 0; b < 256; ++b) alphabet.emplace_back(byte_to_unicode()[size_t(b)], b);
  std::sort(alphabet.begin(), alphabet.end());
  std::array<int32_t, 256> byte_id{};
  for (const auto& [c, b] : alphabet) {
    std::string s;
    append_utf8(s, c);
    byte_id[size_t(b)] = vocab.add(s);
  }

  std::vector<std::vector<int32_t>> words;
  std::vector<int64_t> counts;
  for (const auto& [bytes, count] : word_counts_) {
    std::vector<int32_t> w;
    for (unsigned char c : bytes) w.push_back(byte_id[c]);
    words.push_back(std::move(w));
    counts.push_back(int64_t(count));
  }
  std::unordered_map<Pair, int64_t, PairHash> pair_counts;
  std::unordered_map<Pair, std::vector<uint32_t>, PairHash> where;
  for (size_t w = 0; w < words.size(); ++w)
    for (size_t i = 0; i + 1 < words[w].size(); ++i) {
      const Pair p{words[w][i], words[w][i + 1]};
      pair_counts[p] += counts[w];
      auto& at = where[p];
      if (at.empty() || at.back() != uint32_t(w)) at.push_back(uint32_t(w));
    }
  std::priority_queue<Candidate> queue;
  auto enqueue = [&] {
    for (auto& [p, ws] : where)
      if (pair_counts[p] > 0) queue.push({pair_counts[p], p, std::move(ws)});
    where.clear();
  };
  enqueue();

  std::vector<Merge> merges;
  std::vector<Pair> merged_pairs;
  std::vector<std::pair<Pair, int>> changes;
  while (vocab.size() < opt_.vocab_size && !queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    if (top.count != pair_counts[top.pair]) {  // counts moved since it was queued: requeue
      top.count = pair_counts[top.pair];
      queue.push(std::move(top));
      continue;
    }
    if (top.count < 1 || uint64_t(top.count) < opt_.min_frequency) break;
    const std::string& left = vocab.token(top.pair.first);
    const std::string token = left + vocab.token(top.pair.second);
    const int32_t id = vocab.add(token);
    merges.emplace_back(left, vocab.token(top.pair.second));
    merged_pairs.push_back(top.pair);
    std::sort(top.words.begin(), top.words.end());
    top.words.erase(std::unique(top.words.begin(), top.words.end()), top.words.end());
    for (uint32_t w : top.words) {
      changes.clear();
      merge_word(words[w], top.pair.first, top.pair.second, id, changes);
      for (const auto& [p, delta] : changes) {
        pair_counts[p] += delta * counts[w];
        if (delta > 0) {
          auto& at = where[p];
          if (at.empty() || at.back() != w) at.push_back(w);
        }
      }
    }
    enqueue();
    if (progress) progress(vocab.size(), opt_.vocab_size);
  }
  // A pair merged twice (its result was already a token, reached by another merge) is saved once,
  // at its last rank, as Hugging Face's merge map keeps it.
  std::unordered_map<Pair, size_t, PairHash> last;
  for (size_t i = 0; i < merges.size(); ++i) last[merged_pairs[i]] = i;
  std::vector<Merge> unique;
  for (size_t i = 0; i < merges.size(); ++i)
    if (last[merged_pairs[i]] == i) unique.push_back(merges[i]);
  return BpeModel(std::move(vocab), std::move(unique), "BpeTrainer");
}

}  // namespace xg::text
