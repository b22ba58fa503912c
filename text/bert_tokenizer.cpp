#include "text/bert_tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace xg::text {

BertTokenizer::BertTokenizer(Vocab vocab, TokenizerOptions opt) : vocab_(std::move(vocab)), opt_(std::move(opt)) {
  auto require = [&](const std::string& t, const char* role) {
    const int32_t id = vocab_.id(t);
    if (id < 0) throw std::invalid_argument(fmt::format("[BertTokenizer] the {} token '{}' is not in the vocabulary", role, t));
    return id;
  };
  unk_id_ = require(opt_.unk_token, "unknown");
  const int32_t cls = require(opt_.cls_token, "classifier"), sep = require(opt_.sep_token, "separator");
  require(opt_.pad_token, "padding");
  require(opt_.mask_token, "mask");
  special_tokens_.unk = opt_.unk_token;
  special_tokens_.cls = opt_.cls_token;
  special_tokens_.sep = opt_.sep_token;
  special_tokens_.pad = opt_.pad_token;
  special_tokens_.mask = opt_.mask_token;
  for (const auto& t : {opt_.pad_token, opt_.unk_token, opt_.cls_token, opt_.sep_token, opt_.mask_token}) add_special(t);
  using T = SpecialTokenTemplate;
  template_.single = {{cls, 0}, {T::kFirstText, 0}, {sep, 0}};
  template_.pair = {{cls, 0}, {T::kFirstText, 0}, {sep, 0}, {T::kSecondText, 1}, {sep, 1}};
}

BertTokenizer BertTokenizer::from_file(const std::string& path, TokenizerOptions opt) {
  return BertTokenizer(Vocab::from_file(path), std::move(opt));
}

void BertTokenizer::add_special_tokens(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens)
    if (add_special(t)) special_tokens_.additional.push_back(t);
}

void BertTokenizer::append_tokens(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens) {
    if (t.empty() || vocab_.id(t) >= 0)
      throw std::invalid_argument(fmt::format("[BertTokenizer] cannot append token '{}': {}", t, t.empty() ? "empty" : "already in the vocabulary"));
    decode_utf8(t, InvalidUtf8::Error, "appended token");
    vocab_.add(t);
  }
}

bool BertTokenizer::add_special(const std::string& t) {
  if (t.empty()) throw std::invalid_argument("[BertTokenizer] a special token cannot be empty");
  const auto cps = decode_utf8(t, InvalidUtf8::Error, "special token");
  const int32_t id = vocab_.add(t);
  if (size_t(id) >= special_ids_.size()) special_ids_.resize(size_t(id) + 1, false);
  if (special_ids_[size_t(id)]) return false;
  special_ids_[size_t(id)] = true;
  specials_.push_back({std::u32string(cps.begin(), cps.end()), id});
  // Longest first, so "[MASK]x" never loses to a shorter token sharing its start.
  std::stable_sort(specials_.begin(), specials_.end(),
                   [](const SpecialMatch& a, const SpecialMatch& b) { return a.content.size() > b.content.size(); });
  return true;
}

bool BertTokenizer::is_special(int32_t id) const { return id >= 0 && size_t(id) < special_ids_.size() && special_ids_[size_t(id)]; }

const std::string& BertTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || size_t(id) >= vocab_.size())
    throw std::out_of_range(fmt::format("[BertTokenizer] id {} is outside the vocabulary of {}", id, vocab_.size()));
  return vocab_.token(id);
}

bool BertTokenizer::starts_word(int32_t id) const { return id_to_token(id).rfind("##", 0) != 0; }

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
      // spaced, then decomposed as everything else is (a compatibility ideograph, U+F900 on,
      // becomes its unified twin)
      tmp.assign(1, c);
      if (strip) tmp.clear(), decompose(c, tmp);
      norm.push_back(' ');
      norm += tmp;
      norm.push_back(' ');
      origin.insert(origin.end(), tmp.size() + 2, o);
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
    const SpecialMatch* hit = special_at(cps, i, specials_);
    if (!hit) {
      ++i;
      continue;
    }
    flush_segment(i);
    out.push_back({hit->id, i, i + hit->content.size()});
    i += hit->content.size();
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
void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
}

// Spaces before punctuation and inside contractions: the clean-up of the `tokenizers` WordPiece
// decoder (on each piece, with "do not") and of transformers' clean_up_tokenization (on the whole
// text, without it).
void clean_up(std::string& s, bool do_not) {
  for (auto [from, to] : {std::pair{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
                          {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}})
    if (do_not || std::string_view(from) != " do not") replace_all(s, from, to);
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
    clean_up(piece, /*do_not=*/true);  // the WordPiece decoder cleans each piece up on its own
    out += piece;
  }
  if (opt_.clean_up_tokenization_spaces) clean_up(out, /*do_not=*/false);
  return out;
}

}  // namespace xg::text
