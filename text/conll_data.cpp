#include "text/conll_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "text/roberta_tokenizer.hpp"
#include "text/unicode.hpp"
#include "util/lines.hpp"

namespace xg::text {

namespace {

[[noreturn]] void fail(const std::string& path, size_t line, const std::string& what) {
  throw std::invalid_argument(fmt::format("[conll] {}:{}: {}", path, line, what));
}

char prefix_of(const std::string& tag) { return tag == "O" ? 'O' : tag[0]; }
std::string type_of(const std::string& tag) { return tag == "O" ? "" : tag.substr(2); }

std::vector<std::string> split_whitespace(const std::string& row) {
  std::vector<std::string> fields;
  std::istringstream in(row);
  for (std::string f; in >> f;) fields.push_back(f);
  return fields;
}

// Byte-level BPE (RoBERTa) marks a word's leading space in its tokens.
bool byte_level(const Tokenizer& tokenizer) { return dynamic_cast<const RobertaTokenizer*>(&tokenizer) != nullptr; }

bool scheme_allows(TagScheme scheme, char prefix) {
  if (prefix == 'O' || prefix == 'B' || prefix == 'I') return true;
  return scheme == TagScheme::BIOES || scheme == TagScheme::Auto;
}

}  // namespace

TagScheme parse_tag_scheme(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (n == "auto") return TagScheme::Auto;
  if (n == "iob1") return TagScheme::IOB1;
  if (n == "iob2" || n == "bio") return TagScheme::IOB2;
  if (n == "bioes" || n == "iobes") return TagScheme::BIOES;
  throw std::invalid_argument(fmt::format("[conll] unknown tag scheme '{}' (auto, iob1, iob2 or bioes)", name));
}

std::string tag_scheme_name(TagScheme scheme) {
  switch (scheme) {
    case TagScheme::Auto: return "auto";
    case TagScheme::IOB1: return "iob1";
    case TagScheme::IOB2: return "iob2";
    case TagScheme::BIOES: return "bioes";
  }
  return "?";
}

bool valid_tag(const std::string& tag, std::string* why) {
  auto no = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  if (tag == "O") return true;
  if (tag.size() < 2 || tag[1] != '-') return no("a tag is O or PREFIX-TYPE (B-PER, I-LOC, E-ORG, S-MISC)");
  if (std::string("BIES").find(tag[0]) == std::string::npos) return no(fmt::format("unknown prefix '{}' (B, I, E or S)", tag[0]));
  if (tag.size() == 2) return no("no entity type after the prefix");
  return true;
}

ConllData read_conll(const std::string& path, const ConllOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("[conll] {}: cannot open", path));
  ConllData data;
  ConllSentence current;
  auto close_sentence = [&] {
    if (!current.words.empty()) data.sentences.push_back(std::move(current));
    current = ConllSentence{};
  };
  std::string row;
  for (size_t line = 1; getline_lf(in, row); ++line) {
    if (line == 1 && row.rfind("\xEF\xBB\xBF", 0) == 0) row.erase(0, 3);  // a UTF-8 BOM
    if (const size_t at = invalid_utf8_at(row); at != std::string_view::npos)  // here, where the line is known
      fail(path, line, invalid_utf8_message(row, at));
    const std::vector<std::string> fields = split_whitespace(row);
    if (fields.empty()) {
      close_sentence();
      continue;
    }
    if (fields[0] == "-DOCSTART-") {  // a document boundary: never a word
      close_sentence();
      continue;
    }
    if (data.columns == 0) {
      data.columns = fields.size();
      if (data.columns < 2) fail(path, line, fmt::format("1 column ('{}'): a word line needs the word and its tag", fields[0]));
      if (options.tag_column > data.columns)
        fail(path, line, fmt::format("no tag column {} (the lines have {} columns)", options.tag_column, data.columns));
      if (options.tag_column == 1) fail(path, line, "the tag column cannot be column 1, the word's");
    }
    if (fields.size() != data.columns)
      fail(path, line, fmt::format("{} columns where the first word line has {}", fields.size(), data.columns));
    const size_t tag_at = options.tag_column == 0 ? data.columns - 1 : options.tag_column - 1;
    const std::string& tag = fields[tag_at];
    std::string why;
    if (!valid_tag(tag, &why)) fail(path, line, fmt::format("field {} (tag) '{}': {}", tag_at + 1, tag, why));
    if (!scheme_allows(options.scheme, prefix_of(tag)))
      fail(path, line, fmt::format("field {} (tag) '{}': the {} scheme has no {}- tags", tag_at + 1, tag,
                                   tag_scheme_name(options.scheme), tag[0]));
    if (current.words.empty()) current.line = line;
    current.words.push_back(fields[0]);
    current.tags.push_back(tag);
  }
  close_sentence();
  if (data.sentences.empty()) throw std::invalid_argument(fmt::format("[conll] {}: no words (an empty file?)", path));
  data.scheme = options.scheme == TagScheme::Auto ? detect_tag_scheme(data.sentences) : options.scheme;
  return data;
}

TagScheme detect_tag_scheme(const std::vector<ConllSentence>& sentences) {
  bool iob1 = false;
  for (const auto& s : sentences) {
    std::string previous = "O";
    for (const auto& tag : s.tags) {
      const char p = prefix_of(tag);
      if (p == 'E' || p == 'S') return TagScheme::BIOES;
      if (p == 'I' && (previous == "O" || type_of(previous) != type_of(tag))) iob1 = true;
      previous = tag;
    }
  }
  return iob1 ? TagScheme::IOB1 : TagScheme::IOB2;
}

std::vector<std::string> to_iob2(const std::vector<std::string>& tags, TagScheme scheme) {
  std::vector<std::string> out;
  out.reserve(tags.size());
  std::string previous = "O";
  for (const auto& tag : tags) {
    const char p = prefix_of(tag);
    const std::string type = type_of(tag);
    if (p == 'O') out.push_back("O");
    else if (p == 'B' || p == 'S') out.push_back("B-" + type);
    // IOB1's I- opens an entity unless it continues one of its type; BIOES's I- and E- continue.
    else if (scheme == TagScheme::IOB1 && p == 'I' && (previous == "O" || type_of(previous) != type)) out.push_back("B-" + type);
    else out.push_back("I-" + type);
    previous = tag;
  }
  return out;
}

std::vector<std::string> from_iob2(const std::vector<std::string>& tags, TagScheme scheme) {
  // Repair first: an I- that does not continue an entity of its type opens one.
  std::vector<std::string> fixed = tags;
  for (size_t i = 0; i < fixed.size(); ++i)
    if (prefix_of(fixed[i]) == 'I' && (i == 0 || fixed[i - 1] == "O" || type_of(fixed[i - 1]) != type_of(fixed[i])))
      fixed[i] = "B-" + type_of(fixed[i]);
  if (scheme == TagScheme::IOB2 || scheme == TagScheme::Auto) return fixed;
  std::vector<std::string> out(fixed.size());
  for (size_t i = 0; i < fixed.size(); ++i) {
    const char p = prefix_of(fixed[i]);
    const std::string type = type_of(fixed[i]);
    const bool continues = i + 1 < fixed.size() && fixed[i + 1] == "I-" + type;
    if (p == 'O') out[i] = "O";
    else if (scheme == TagScheme::IOB1)  // B- only where the previous word is of the same type
      out[i] = (p == 'B' && i > 0 && fixed[i - 1] != "O" && type_of(fixed[i - 1]) == type ? "B-" : "I-") + type;
    else if (p == 'B') out[i] = (continues ? "B-" : "S-") + type;
    else out[i] = (continues ? "I-" : "E-") + type;
  }
  return out;
}

std::vector<std::string> ner_label_list(const std::vector<std::vector<std::string>>& iob2_tags) {
  std::map<std::string, std::pair<bool, bool>> types;  // type -> (has B-, has I-)
  for (const auto& tags : iob2_tags)
    for (const auto& t : tags) {
      if (t == "O") continue;
      auto& seen = types[type_of(t)];
      (prefix_of(t) == 'B' ? seen.first : seen.second) = true;
    }
  std::vector<std::string> labels{"O"};
  for (const auto& [type, seen] : types) {
    labels.push_back("B-" + type);  // I- without B- in IOB2 cannot occur; B- always exists
    if (seen.second) labels.push_back("I-" + type);
  }
  return labels;
}

std::vector<int64_t> continuation_labels(const std::vector<std::string>& id2label) {
  std::vector<int64_t> out(id2label.size());
  for (size_t i = 0; i < id2label.size(); ++i) {
    out[i] = int64_t(i);
    if (prefix_of(id2label[i]) != 'B') continue;
    const auto it = std::find(id2label.begin(), id2label.end(), "I-" + type_of(id2label[i]));
    if (it != id2label.end()) out[i] = int64_t(it - id2label.begin());
  }
  return out;
}

std::vector<std::pair<size_t, size_t>> joined_word_spans(const std::vector<std::string>& words) {
  std::vector<std::pair<size_t, size_t>> spans;
  size_t at = 0;
  for (const auto& w : words) {
    const size_t n = decode_utf8(w, InvalidUtf8::Replace).size();
    spans.emplace_back(at, at + n);
    at += n + 1;
  }
  return spans;
}

std::vector<std::pair<size_t, size_t>> token_word_spans(const Tokenizer& tokenizer, const std::vector<Token>& tokens) {
  std::vector<std::pair<size_t, size_t>> spans;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i == 0 || tokenizer.starts_word(tokens[i].id) || tokenizer.is_special(tokens[i].id)) spans.emplace_back(tokens[i].start, tokens[i].end);
    else spans.back().second = std::max(spans.back().second, tokens[i].end);
  }
  return spans;
}

std::vector<TokenWindow> align_words(const Tokenizer& tokenizer, const std::vector<Token>& tokens,
                                     const std::vector<std::pair<size_t, size_t>>& word_spans,
                                     const std::vector<int64_t>& label_ids, const std::vector<int64_t>& continuation,
                                     size_t sentence, const WordAlignOptions& options) {
  constexpr size_t kSpecials = 2;  // every family wraps one text as CLS text SEP
  if (options.max_len <= kSpecials)
    throw std::invalid_argument(fmt::format("[ner] max_len {} leaves no room for a sub-token beside the 2 special tokens", options.max_len));
  const size_t room = options.max_len - kSpecials;
  const size_t stride = options.stride == 0 ? room / 4 : options.stride;
  if (stride >= room)
    throw std::invalid_argument(fmt::format("[ner] stride {} must be below the {} sub-tokens a window holds (max_len {} - 2)",
                                            stride, room, options.max_len));
  // Each token's word and whether it is the word's first piece.
  std::vector<int64_t> word_of(tokens.size(), -1);
  std::vector<bool> first(tokens.size(), false);
  size_t w = 0;
  int64_t last_word = -1;
  for (size_t t = 0; t < tokens.size(); ++t) {
    while (w < word_spans.size() && word_spans[w].second <= tokens[t].start) ++w;
    if (w == word_spans.size()) break;  // text after the last word (cannot happen with whitespace words)
    word_of[t] = int64_t(w);
    first[t] = int64_t(w) != last_word;
    last_word = int64_t(w);
  }
  std::vector<TokenWindow> windows;
  for (size_t begin = 0;; begin += room - stride) {
    const size_t end = std::min(tokens.size(), begin + room);
    TokenWindow win;
    win.sentence = sentence;
    win.ids.push_back(tokenizer.cls_id());
    win.labels.push_back(kIgnoreLabel);
    win.word_start.push_back(-1);
    win.text_begin = 1;
    for (size_t t = begin; t < end; ++t) {
      win.ids.push_back(tokens[t].id);
      const bool labelled = word_of[t] >= 0 && !label_ids.empty() && (first[t] || options.label_all_tokens);
      const int64_t label = labelled ? label_ids[size_t(word_of[t])] : kIgnoreLabel;
      win.labels.push_back(labelled && !first[t] && !continuation.empty() ? continuation[size_t(label)] : label);
      win.word_start.push_back(first[t] ? word_of[t] : -1);
    }
    win.text_end = win.ids.size();
    win.ids.push_back(tokenizer.sep_id());
    win.labels.push_back(kIgnoreLabel);
    win.word_start.push_back(-1);
    windows.push_back(std::move(win));
    if (end == tokens.size()) break;
  }
  return windows;
}

std::vector<WordSource> word_sources(const std::vector<TokenWindow>& windows, const std::vector<size_t>& window_ids,
                                     size_t n_words) {
  std::vector<WordSource> sources(n_words);
  std::vector<size_t> best_context(n_words, 0);
  for (size_t id : window_ids) {
    const TokenWindow& win = windows[id];
    for (size_t p = win.text_begin; p < win.text_end; ++p) {
      const int64_t word = win.word_start[p];
      if (word < 0 || size_t(word) >= n_words) continue;
      const size_t context = std::min(p - win.text_begin, win.text_end - 1 - p);
      WordSource& s = sources[size_t(word)];
      // Strictly more context wins; on a tie the earlier window keeps the word.
      if (s.window == size_t(-1) || context > best_context[size_t(word)]) {
        s = {id, p};
        best_context[size_t(word)] = context;
      }
    }
  }
  return sources;
}

std::vector<Token> tokenize_as_words(const Tokenizer& tokenizer, const std::string& text, const std::string& where) {
  if (!byte_level(tokenizer) || text.empty() || text[0] == ' ') return tokenizer.tokenize(text, where);
  std::vector<Token> tokens = tokenizer.tokenize(" " + text, where);
  for (auto& t : tokens) t.start = t.start > 0 ? t.start - 1 : 0, t.end = t.end > 0 ? t.end - 1 : 0;
  return tokens;
}

std::vector<Token> tokenize_text_as_words(const Tokenizer& tokenizer, const std::string& raw, const std::string& where) {
  const std::vector<char32_t> cps = decode_utf8(raw, InvalidUtf8::Error, where);
  std::u32string joined;
  std::vector<size_t> origin;  // per code point of `joined`, its index in `raw`
  for (size_t i = 0; i < cps.size();) {
    if (is_whitespace(cps[i])) {
      ++i;
      continue;
    }
    if (!joined.empty()) joined += U' ', origin.push_back(i);  // the space stands at the word's start
    for (; i < cps.size() && !is_whitespace(cps[i]); ++i) joined += cps[i], origin.push_back(i);
  }
  std::vector<Token> tokens = tokenize_as_words(tokenizer, encode_utf8(joined), where);
  const auto text_index = [&](size_t j) { return j < origin.size() ? origin[j] : cps.size(); };
  for (auto& t : tokens) {
    const size_t start = text_index(t.start);
    t.end = t.end > t.start ? origin[t.end - 1] + 1 : start;
    t.start = start;
  }
  return tokens;
}

}  // namespace xg::text
