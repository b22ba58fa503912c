#include "text/wordpiece_trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <queue>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace xg::text {

namespace {

using WordCounts = std::map<std::u32string, uint64_t>;

// A tokenizer whose only job is normalising and splitting words.
BertTokenizer word_splitter(const WordPieceTrainerOptions& opt) {
  const auto& n = opt.normalization;
  return BertTokenizer(Vocab({n.pad_token, n.unk_token, n.cls_token, n.sep_token, n.mask_token}), n);
}

void count_words(const BertTokenizer& splitter, const std::string& line, const std::string& where, WordCounts& counts) {
  for (auto& w : splitter.words(line, where)) ++counts[w];
}

struct PairKey {
  static uint64_t make(int32_t a, int32_t b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }
  static int32_t left(uint64_t k) { return int32_t(k >> 32); }
  static int32_t right(uint64_t k) { return int32_t(k & 0xffffffffu); }
};

Vocab train(const WordCounts& counts, const WordPieceTrainerOptions& opt, const std::function<void(size_t, size_t)>& progress) {
  if (counts.empty()) throw std::invalid_argument("[train_wordpiece] the corpus has no words");
  std::vector<std::string> tokens;
  std::unordered_map<std::string, int32_t> ids;
  auto intern = [&](const std::string& t) {
    auto [it, inserted] = ids.emplace(t, int32_t(tokens.size()));
    if (inserted) tokens.push_back(t);
    return it->second;
  };
  for (const auto& s : opt.special_tokens) intern(s);
  if (opt.vocab_size <= tokens.size())
    throw std::invalid_argument(fmt::format("[train_wordpiece] vocab_size {} leaves no room beyond {} special tokens",
                                            opt.vocab_size, tokens.size()));

  // Alphabet: the most frequent characters (ties by code point), kept in code-point order.
  std::map<char32_t, uint64_t> char_freq;
  for (const auto& [w, c] : counts)
    for (char32_t ch : w) char_freq[ch] += c;
  std::vector<std::pair<char32_t, uint64_t>> chars(char_freq.begin(), char_freq.end());
  if (opt.limit_alphabet > 0 && chars.size() > opt.limit_alphabet) {
    std::stable_sort(chars.begin(), chars.end(), [](auto& a, auto& b) { return a.second > b.second; });
    chars.resize(opt.limit_alphabet);
    std::sort(chars.begin(), chars.end());
  }
  std::set<char32_t> alphabet;
  for (auto& [ch, _] : chars) {
    alphabet.insert(ch);
    intern(encode_utf8(std::u32string(1, ch)));
  }

  // Words as symbol ids: first char plain, the rest "##"-prefixed; characters outside the
  // alphabet are left out, as Hugging Face's trainer does (as symbols they merged into tokens such
  // as "a[UNK]" that no tokenizer produces).
  struct Word {
    std::vector<int32_t> sym;
    uint64_t count;
  };
  std::vector<Word> words;
  intern(opt.normalization.unk_token);
  for (const auto& [w, c] : counts) {
    Word word{{}, c};
    for (size_t i = 0; i < w.size(); ++i) {
      if (!alphabet.count(w[i])) continue;
      const std::string ch = encode_utf8(std::u32string(1, w[i]));
      word.sym.push_back(intern(i == 0 ? ch : "##" + ch));
    }
    words.push_back(std::move(word));
  }

  // Pair counts and where each pair occurs.
  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::set<size_t>> where;
  for (size_t wi = 0; wi < words.size(); ++wi) {
    const auto& s = words[wi].sym;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const uint64_t k = PairKey::make(s[i], s[i + 1]);
      pair_count[k] += int64_t(words[wi].count);
      where[k].insert(wi);
    }
  }
  // Max-heap on (count, then the smallest pair); stale entries are skipped when popped.
  struct Entry {
    int64_t count;
    uint64_t pair;
    bool operator<(const Entry& o) const { return count != o.count ? count < o.count : pair > o.pair; }
  };
  std::priority_queue<Entry> heap;
  for (auto& [k, c] : pair_count) heap.push({c, k});

  const size_t wanted = opt.vocab_size - std::min(opt.vocab_size, tokens.size());
  size_t merges = 0;
  while (tokens.size() < opt.vocab_size && !heap.empty()) {
    const Entry top = heap.top();
    heap.pop();
    const int64_t current = pair_count[top.pair];
    if (current != top.count) {
      if (current > 0) heap.push({current, top.pair});
      continue;
    }
    if (current < int64_t(std::max<size_t>(opt.min_frequency, 1))) break;
    const int32_t a = PairKey::left(top.pair), b = PairKey::right(top.pair);
    const std::string& right = tokens[size_t(b)];
    const int32_t merged = intern(tokens[size_t(a)] + (right.rfind("##", 0) == 0 ? right.substr(2) : right));
    std::set<uint64_t> touched;
    const std::set<size_t> occurrences = where[top.pair];
    for (size_t wi : occurrences) {
      auto& s = words[wi].sym;
      const int64_t c = int64_t(words[wi].count);
      auto change = [&](int32_t x, int32_t y, int64_t delta) {
        const uint64_t k = PairKey::make(x, y);
        pair_count[k] += delta;
        touched.insert(k);
        if (delta > 0) where[k].insert(wi);
      };
      std::vector<int32_t> out;
      out.reserve(s.size());
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          if (!out.empty()) {
            change(out.back(), a, -c);
            change(out.back(), merged, c);
          }
          if (i + 2 < s.size()) {
            change(b, s[i + 2], -c);
            change(merged, s[i + 2], c);
          }
          out.push_back(merged);
          i += 2;
        } else {
          out.push_back(s[i]);
          ++i;
        }
      }
      s = std::move(out);
    }
    pair_count[top.pair] = 0;
    where.erase(top.pair);
    for (uint64_t k : touched)
      if (pair_count[k] > 0) heap.push({pair_count[k], k});
    ++merges;
    if (progress && (merges % 500 == 0)) progress(merges, wanted);
  }
  if (progress) progress(merges, wanted);
  return Vocab(tokens);
}

}  // namespace

Vocab train_wordpiece_lines(const std::vector<std::string>& lines, const WordPieceTrainerOptions& opt,
                            const std::function<void(size_t, size_t)>& progress) {
  const BertTokenizer splitter = word_splitter(opt);
  WordCounts counts;
  for (size_t i = 0; i < lines.size(); ++i) count_words(splitter, lines[i], fmt::format("line {}", i + 1), counts);
  return train(counts, opt, progress);
}

Vocab train_wordpiece(const std::vector<std::string>& files, const WordPieceTrainerOptions& opt,
                      const std::function<void(size_t, size_t)>& progress) {
  const BertTokenizer splitter = word_splitter(opt);
  WordCounts counts;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw std::runtime_error(fmt::format("[train_wordpiece] {}: cannot open", f));
    std::string line;
    for (size_t n = 1; std::getline(in, line); ++n)
      if (!opt.skip_line || !opt.skip_line(n)) count_words(splitter, line, fmt::format("{}:{}", f, n), counts);
  }
  return train(counts, opt, progress);
}

}  // namespace xg::text
