#include "text/bert_tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "util/threads.hpp"

namespace xg::text {

BertTokenizer::BertTokenizer(Vocab vocab, TokenizerOptions opt) : vocab_(std::move(vocab)), opt_(std::move(opt)) {
  auto require = [&](const std::string& t, const char* role) {
    const int32_t id = vocab_.id(t);
    if (id < 0) throw std::invalid_argument(fmt::format("[BertTokenizer] the {} token '{}' is not in the vocabulary", role, t));
    return id;
  };
  unk_id_ = require(opt_.unk_token, "unknown");
  cls_id_ = require(opt_.cls_token, "classifier");
  sep_id_ = require(opt_.sep_token, "separator");
  pad_id_ = require(opt_.pad_token, "padding");
  mask_id_ = require(opt_.mask_token, "mask");
  add_special_tokens({opt_.pad_token, opt_.unk_token, opt_.cls_token, opt_.sep_token, opt_.mask_token});
}

BertTokenizer BertTokenizer::from_file(const std::string& path, TokenizerOptions opt) {
  return BertTokenizer(Vocab::from_file(path), std::move(opt));
}

void BertTokenizer::add_special_tokens(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens) {
    if (t.empty()) throw std::invalid_argument("[BertTokenizer] a special token cannot be empty");
    const auto cps = decode_utf8(t, InvalidUtf8::Error, "special token");
    const int32_t id = vocab_.add(t);
    if (size_t(id) >= special_ids_.size()) special_ids_.resize(size_t(id) + 1, false);
    if (special_ids_[size_t(id)]) continue;
    special_ids_[size_t(id)] = true;
    specials_.emplace_back(std::u32string(cps.begin(), cps.end()), id);
  }
  // Longest first, so "[MASK]x" never loses to a shorter token sharing its start.
  std::stable_sort(specials_.begin(), specials_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

bool BertTokenizer::is_special(int32_t id) const { return id >= 0 && size_t(id) < special_ids_.size() && special_ids_[size_t(id)]; }

// Normalises cps[begin, end) and splits it into words, keeping each char's original position.
void BertTokenizer::split_words(const std::vector<char32_t>& cps, size_t begin, size_t end, std::vector<Word>& out) const {
  const bool strip = opt_.strip_accents.value_or(opt_.lowercase);
  // 1. clean text, CJK spacing, and (when stripping accents) canonical decomposition
  std::u32string norm;
  std::vector<uint32_t> origin;
  norm.reserve(end - begin);
  origin.reserve(end - begin);
  std::u32string tmp;
  for (size_t i = begin; i < end; ++i) {
    const char32_t c = cps[i];
    const uint32_t o = uint32_t(i);
    if (opt_.clean_text) {
      if (c == 0 || c == 0xFFFD || is_control(c)) continue;
      if (is_whitespace(c)) {
        norm.push_back(' ');
        origin.push_back(o);
        continue;
      }
    }
    if (opt_.handle_chinese_chars && c >= 0x3400 && is_cjk(c)) {
      norm.append({' ', c, ' '});
      origin.insert(origin.end(), {o, o, o});
      continue;
    }
    if (strip && c >= 0xC0) {
      tmp.clear();
      decompose(c, tmp);
      norm += tmp;
      origin.insert(origin.end(), tmp.size(), o);
    } else {
      norm.push_back(c);
      origin.push_back(o);
    }
  }
  if (strip) {
    // Canonical ordering of combining marks (stable by combining class), then drop Mn.
    for (size_t i = 0; i < norm.size();) {
      if (combining_class(norm[i]) == 0) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < norm.size() && combining_class(norm[j]) != 0) ++j;
      std::vector<std::pair<char32_t, uint32_t>> run;
      for (size_t k = i; k < j; ++k) run.emplace_back(norm[k], origin[k]);
      std::stable_sort(run.begin(), run.end(),
                       [](const auto& a, const auto& b) { return combining_class(a.first) < combining_class(b.first); });
      for (size_t k = i; k < j; ++k) std::tie(norm[k], origin[k]) = run[k - i];
      i = j;
    }
    size_t w = 0;
    for (size_t r = 0; r < norm.size(); ++r)
      if (!is_mark_nonspacing(norm[r])) {
        norm[w] = norm[r];
        origin[w++] = origin[r];
      }
    norm.resize(w);
    origin.resize(w);
  }
  // 2. lower-case, 3. split on whitespace and around punctuation
  Word cur;
  auto flush = [&] {
    if (!cur.chars.empty()) out.push_back(std::move(cur));
    cur = Word{};
  };
  for (size_t i = 0; i < norm.size(); ++i) {
    tmp.clear();
    if (opt_.lowercase) to_lower(norm[i], tmp);
    else tmp.push_back(norm[i]);
    for (char32_t c : tmp) {
      if (is_whitespace(c)) {
        flush();
      } else if (is_punctuation(c)) {
        flush();
        cur.chars.push_back(c);
        cur.origin.push_back(origin[i]);
        flush();
      } else {
        cur.chars.push_back(c);
        cur.origin.push_back(origin[i]);
      }
    }
  }
  flush();
}

void BertTokenizer::wordpiece(const Word& w, std::vector<Token>& out) const {
  const size_t n = w.chars.size();
  const size_t word_start = w.origin.front(), word_end = w.origin.back() + 1;
  if (n > opt_.max_input_chars_per_word) {
    out.push_back({unk_id_, word_start, word_end});
    return;
  }
  // UTF-8 of the word once, with each char's byte offset, so candidates are substrings.
  std::string bytes;
  std::vector<size_t> at(n + 1);
  for (size_t i = 0; i < n; ++i) {
    at[i] = bytes.size();
    append_utf8(bytes, w.chars[i]);
  }
  at[n] = bytes.size();
  const size_t first = out.size();
  std::string candidate;
  for (size_t start = 0; start < n;) {
    int32_t found = -1;
    size_t end = n;
    for (; end > start; --end) {
      std::string_view piece(bytes.data() + at[start], at[end] - at[start]);
      if (start > 0) {
        candidate.assign("##");
        candidate.append(piece);
        piece = candidate;
      }
      found = vocab_.id(piece);
      if (found >= 0) break;
    }
    if (found < 0) {  // no piece fits: the whole word is unknown
      out.resize(first);
      out.push_back({unk_id_, word_start, word_end});
      return;
    }
    out.push_back({found, w.origin[start], w.origin[end - 1] + 1});
    start = end;
  }
}

std::vector<Token> BertTokenizer::tokenize(std::string_view text, const std::string& where) const {
  const std::vector<char32_t> cps = decode_utf8(text, opt_.invalid_utf8, where);
  std::vector<Token> out;
  std::vector<Word> words;
  size_t seg = 0;
  auto flush_segment = [&](size_t end) {
    if (end <= seg) return;
    words.clear();
    split_words(cps, seg, end, words);
    for (const auto& w : words) wordpiece(w, out);
  };
  for (size_t i = 0; i < cps.size();) {
    int32_t matched = -1;
    size_t len = 0;
    if (cps[i] == '[' || !specials_.empty()) {
      for (const auto& [s, id] : specials_)
        if (s[0] == cps[i] && i + s.size() <= cps.size() && std::equal(s.begin(), s.end(), cps.begin() + long(i))) {
          matched = id;
          len = s.size();
          break;
        }
    }
    if (matched < 0) {
      ++i;
      continue;
    }
    flush_segment(i);
    out.push_back({matched, i, i + len});
    i += len;
    seg = i;
  }
  flush_segment(cps.size());
  return out;
}

std::vector<std::u32string> BertTokenizer::words(std::string_view text, const std::string& where) const {
  const std::vector<char32_t> cps = decode_utf8(text, opt_.invalid_utf8, where);
  std::vector<Word> ws;
  split_words(cps, 0, cps.size(), ws);
  std::vector<std::u32string> out;
  for (auto& w : ws) out.push_back(std::move(w.chars));
  return out;
}

namespace {
// Hugging Face's truncation lengths for a pair with `budget` content tokens.
std::pair<size_t, size_t> longest_first(size_t n1, size_t n2, size_t budget) {
  if (n1 + n2 <= budget) return {n1, n2};
  const bool swap = n1 > n2;
  if (swap) std::swap(n1, n2);
  n2 = n1 > budget ? n1 : std::max(n1, budget - n1);
  if (n1 + n2 > budget) {
    n1 = budget / 2;
    n2 = n1 + budget % 2;
  }
  if (swap) std::swap(n1, n2);
  return {n1, n2};
}
}  // namespace

Encoding BertTokenizer::assemble(std::vector<Token> a, std::vector<Token>* b, const EncodeOptions& opt) const {
  const size_t added = opt.add_special_tokens ? (b ? 3 : 2) : 0;
  if (opt.max_length > 0) {
    if (opt.max_length < added)
      throw std::invalid_argument(fmt::format("[encode] max_length {} leaves no room for {} special tokens", opt.max_length, added));
    const size_t budget = opt.max_length - added;
    const size_t nb = b ? b->size() : 0;
    if (a.size() + nb > budget) {
      if (!b || opt.truncation == Truncation::LongestFirst) {
        auto [n1, n2] = b ? longest_first(a.size(), nb, budget) : std::pair<size_t, size_t>{budget, 0};
        a.resize(std::min(a.size(), n1));
        if (b) b->resize(std::min(nb, n2));
      } else if (opt.truncation == Truncation::OnlyFirst) {
        if (nb >= budget)
          throw std::invalid_argument(fmt::format("[encode] only_first truncation: the second text alone has {} tokens, max_length {}", nb, opt.max_length));
        a.resize(budget - nb);
      } else {
        if (a.size() >= budget)
          throw std::invalid_argument(fmt::format("[encode] only_second truncation: the first text alone has {} tokens, max_length {}", a.size(), opt.max_length));
        b->resize(budget - a.size());
      }
    }
  }
  Encoding e;
  auto push = [&](int32_t id, int32_t type, std::pair<size_t, size_t> off, bool special) {
    e.ids.push_back(id);
    e.type_ids.push_back(type);
    e.attention_mask.push_back(1);
    e.special_tokens_mask.push_back(special);
    e.offsets.push_back(off);
  };
  if (opt.add_special_tokens) push(cls_id_, 0, {0, 0}, true);
  for (const auto& t : a) push(t.id, 0, {t.start, t.end}, false);
  if (opt.add_special_tokens) push(sep_id_, 0, {0, 0}, true);
  if (b) {
    for (const auto& t : *b) push(t.id, 1, {t.start, t.end}, false);
    if (opt.add_special_tokens) push(sep_id_, 1, {0, 0}, true);
  }
  while (e.size() < opt.pad_to) {
    push(pad_id_, 0, {0, 0}, true);
    e.attention_mask.back() = 0;
  }
  return e;
}

Encoding BertTokenizer::encode(std::string_view a, const EncodeOptions& opt) const {
  return assemble(tokenize(a), nullptr, opt);
}

Encoding BertTokenizer::encode_pair(std::string_view a, std::string_view b, const EncodeOptions& opt) const {
  std::vector<Token> tb = tokenize(b, "second text");
  return assemble(tokenize(a, "first text"), &tb, opt);
}

std::vector<Encoding> BertTokenizer::encode_batch(const std::vector<std::string>& texts, const EncodeOptions& opt,
                                                  size_t threads) const {
  std::vector<Encoding> out(texts.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, std::max<size_t>(1, texts.size()));
  EncodeOptions unpadded = opt;
  unpadded.pad_to = 0;
  run_on_threads(threads, [&](size_t t) {
    for (size_t i = t * texts.size() / threads; i < (t + 1) * texts.size() / threads; ++i)
      out[i] = assemble(tokenize(texts[i], fmt::format("batch item {}", i)), nullptr, unpadded);
  });
  size_t target = opt.pad_to;
  if (opt.pad_to_longest)
    for (const auto& e : out) target = std::max(target, e.size());
  for (auto& e : out)
    while (e.size() < target) {
      e.ids.push_back(pad_id_);
      e.type_ids.push_back(0);
      e.attention_mask.push_back(0);
      e.special_tokens_mask.push_back(1);
      e.offsets.emplace_back(0, 0);
    }
  return out;
}

namespace {
void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
}
}  // namespace

std::string BertTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::string out;
  bool first = true;
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= vocab_.size())
      throw std::out_of_range(fmt::format("[decode] id {} is outside the vocabulary of {}", id, vocab_.size()));
    if (skip_special_tokens && is_special(id)) continue;
    std::string piece = vocab_.token(id);
    if (!first) {
      if (piece.rfind("##", 0) == 0) piece.erase(0, 2);
      else piece.insert(0, " ");
    }
    first = false;
    // Hugging Face cleans each piece up on its own
    for (auto [from, to] : {std::pair{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
                            {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}})
      replace_all(piece, from, to);
    out += piece;
  }
  return out;
}

}  // namespace xg::text
