#include "text/tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "util/threads.hpp"

namespace xg::text {

const SpecialMatch* special_at(const std::vector<char32_t>& cps, size_t i, const std::vector<SpecialMatch>& specials) {
  for (const SpecialMatch& s : specials)
    if (s.content[0] == cps[i] && i + s.content.size() <= cps.size() &&
        std::equal(s.content.begin(), s.content.end(), cps.begin() + long(i)))
      return &s;
  return nullptr;
}

size_t SpecialTokenTemplate::added(bool is_pair) const {
  size_t n = 0;
  for (const Piece& p : is_pair ? pair : single) n += p.id >= 0;
  return n;
}

int32_t Tokenizer::required_id(const std::string& token, const char* role) const {
  if (token.empty()) throw std::invalid_argument(fmt::format("[{}] this tokenizer has no {}", tokenizer_class(), role));
  const int32_t id = token_to_id(token);
  if (id < 0)
    throw std::invalid_argument(fmt::format("[{}] the {} '{}' is not in the vocabulary", tokenizer_class(), role, token));
  return id;
}

int32_t Tokenizer::unk_id() const { return required_id(special_tokens().unk, "unk_token"); }
int32_t Tokenizer::cls_id() const { return required_id(special_tokens().cls, "cls_token"); }
int32_t Tokenizer::sep_id() const { return required_id(special_tokens().sep, "sep_token"); }
int32_t Tokenizer::pad_id() const { return required_id(special_tokens().pad, "pad_token"); }
int32_t Tokenizer::mask_id() const { return required_id(special_tokens().mask, "mask_token"); }

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

void truncate(std::vector<Token>& a, std::vector<Token>* b, size_t added, const EncodeOptions& opt) {
  if (opt.max_length < added)
    throw std::invalid_argument(fmt::format("[encode] max_length {} leaves no room for {} special tokens", opt.max_length, added));
  const size_t budget = opt.max_length - added;
  const size_t nb = b ? b->size() : 0;
  if (a.size() + nb <= budget) return;
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
}  // namespace

Encoding Tokenizer::assemble(std::vector<Token> a, std::vector<Token>* b, const EncodeOptions& opt) const {
  const SpecialTokenTemplate& tpl = special_token_template();
  if (opt.max_length > 0) truncate(a, b, opt.add_special_tokens ? tpl.added(b != nullptr) : 0, opt);
  Encoding e;
  auto push = [&](int32_t id, int32_t type, std::pair<size_t, size_t> off, bool special) {
    e.ids.push_back(id);
    e.type_ids.push_back(type);
    e.attention_mask.push_back(1);
    e.special_tokens_mask.push_back(special);
    e.offsets.push_back(off);
  };
  auto push_text = [&](const std::vector<Token>& text, int32_t type) {
    for (const auto& t : text) push(t.id, type, {t.start, t.end}, false);
  };
  if (!opt.add_special_tokens) {
    push_text(a, 0);
    if (b) push_text(*b, 1);
  } else {
    for (const auto& p : b ? tpl.pair : tpl.single) {
      if (p.id == SpecialTokenTemplate::kFirstText) push_text(a, p.type_id);
      else if (p.id == SpecialTokenTemplate::kSecondText) push_text(*b, p.type_id);
      else push(p.id, p.type_id, {0, 0}, true);
    }
  }
  pad(e, opt.pad_to);
  return e;
}

void Tokenizer::pad(Encoding& e, size_t length) const {
  if (e.size() >= length) return;
  const int32_t id = pad_id();
  while (e.size() < length) {
    e.ids.push_back(id);
    e.type_ids.push_back(0);
    e.attention_mask.push_back(0);
    e.special_tokens_mask.push_back(1);
    e.offsets.emplace_back(0, 0);
  }
}

Encoding Tokenizer::encode(std::string_view a, const EncodeOptions& opt) const {
  return assemble(tokenize(a), nullptr, opt);
}

Encoding Tokenizer::encode_pair(std::string_view a, std::string_view b, const EncodeOptions& opt) const {
  std::vector<Token> tb = tokenize(b, "second text");
  return assemble(tokenize(a, "first text"), &tb, opt);
}

std::vector<PairWindow> Tokenizer::encode_pair_windows(std::vector<Token> a, const std::vector<Token>& b, size_t max_length,
                                                      size_t stride) const {
  const SpecialTokenTemplate& tpl = special_token_template();
  const size_t fixed = tpl.added(true) + a.size();
  if (max_length <= fixed)
    throw std::invalid_argument(fmt::format("[encode] max_length {} leaves no room for the second text after the first's {} tokens "
                                            "and {} special tokens", max_length, a.size(), tpl.added(true)));
  const size_t room = max_length - fixed;
  if (b.size() > room && stride >= room)
    throw std::invalid_argument(fmt::format("[encode] stride {} must be smaller than the {} tokens a window leaves for the second text "
                                            "(max_length {}, first text {} tokens)", stride, room, max_length, a.size()));
  // where the second text starts: the template's pieces before it
  size_t second_begin = 0;
  for (const auto& p : tpl.pair) {
    if (p.id == SpecialTokenTemplate::kSecondText) break;
    second_begin += p.id == SpecialTokenTemplate::kFirstText ? a.size() : 1;
  }
  std::vector<PairWindow> out;
  for (size_t start = 0;; start += room - stride) {
    const size_t stop = std::min(start + room, b.size());
    std::vector<Token> part(b.begin() + long(start), b.begin() + long(stop));
    out.push_back({assemble(a, &part, {}), second_begin, second_begin + part.size()});
    if (stop == b.size()) break;
  }
  return out;
}

std::vector<Encoding> Tokenizer::encode_batch(const std::vector<std::string>& texts, const EncodeOptions& opt,
                                              size_t threads) const {
  std::vector<Encoding> out(texts.size());
  if (threads == 0) threads = default_thread_count();
  threads = std::min(threads, std::max<size_t>(1, texts.size()));
  EncodeOptions unpadded = opt;
  unpadded.pad_to = 0;
  run_on_threads(threads, [&](size_t t) {
    for (size_t i = t * texts.size() / threads; i < (t + 1) * texts.size() / threads; ++i)
      out[i] = assemble(tokenize(texts[i], fmt::format("batch item {}", i)), nullptr, unpadded);
  }, fmt::format("tokenizing {} texts", texts.size()));
  size_t target = opt.pad_to;
  if (opt.pad_to_longest)
    for (const auto& e : out) target = std::max(target, e.size());
  for (auto& e : out) pad(e, target);
  return out;
}

}  // namespace xg::text
