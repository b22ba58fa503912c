#include "text/roberta_tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "text/byte_level.hpp"

namespace xg::text {

namespace {
// Leading and trailing characters of a token that trim_offsets leaves out: "Ġ" or whitespace.
std::pair<uint32_t, uint32_t> count_spaces(const std::u32string& s) {
  auto space = [](char32_t c) { return c == 0x120 || is_whitespace(c); };
  size_t lead = 0, trail = 0;
  while (lead < s.size() && space(s[lead])) ++lead;
  while (trail < s.size() && space(s[s.size() - 1 - trail])) ++trail;
  return {uint32_t(lead), uint32_t(trail)};
}

// A token with its offsets trimmed as Hugging Face's process_offsets does: a prefix space it
// added itself stays in the text's first token.
Token trimmed(int32_t id, size_t s, size_t e, std::pair<uint32_t, uint32_t> spaces, bool first_token,
              const RobertaTokenizerOptions& opt) {
  const auto [lead, trail] = spaces;
  if (opt.trim_offsets) {
    const bool first = first_token || s == 0;
    if (lead > 0 && !(first && opt.add_prefix_space && lead == 1)) s = std::min(s + lead, e);
    if (trail > 0 && e >= trail) e = std::max(e - trail, s);
  }
  return {id, s, e};
}

std::u32string to_u32(std::string_view s) {
  const auto cps = decode_utf8(s, InvalidUtf8::Replace);
  return std::u32string(cps.begin(), cps.end());
}
}  // namespace

RobertaTokenizer::RobertaTokenizer(BpeModel model, RobertaTokenizerOptions opt) : model_(std::move(model)), opt_(std::move(opt)) {
  for (size_t id = 0; id < model_.vocab().size(); ++id) {
    const std::string& t = model_.vocab().token(int32_t(id));
    bytes_of_.push_back(from_byte_level(t));
    spaces_.push_back(count_spaces(to_u32(t)));
  }
  special_tokens_.bos = opt_.bos_token;
  special_tokens_.eos = opt_.eos_token;
  special_tokens_.unk = opt_.unk_token;
  special_tokens_.sep = opt_.sep_token;
  special_tokens_.pad = opt_.pad_token;
  special_tokens_.cls = opt_.cls_token;
  special_tokens_.mask = opt_.mask_token;
  for (const auto& t : {opt_.bos_token, opt_.eos_token, opt_.unk_token, opt_.sep_token, opt_.pad_token, opt_.cls_token})
    add_special(t, false);
  add_special(opt_.mask_token, opt_.mask_lstrip);
  const int32_t cls = token_to_id(opt_.cls_token), sep = token_to_id(opt_.sep_token);
  using T = SpecialTokenTemplate;
  template_.single = {{cls, 0}, {T::kFirstText, 0}, {sep, 0}};
  template_.pair = {{cls, 0}, {T::kFirstText, 0}, {sep, 0}, {sep, 0}, {T::kSecondText, 0}, {sep, 0}};
}

RobertaTokenizer RobertaTokenizer::from_files(const std::string& vocab_json, const std::string& merges_txt, RobertaTokenizerOptions opt) {
  return RobertaTokenizer(BpeModel::from_files(vocab_json, merges_txt), std::move(opt));
}

void RobertaTokenizer::add_special_tokens(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens)
    if (add_special(t, false)) special_tokens_.additional.push_back(t);
}

bool RobertaTokenizer::add_special(const std::string& t, bool lstrip) {
  if (t.empty()) throw std::invalid_argument("[RobertaTokenizer] a special token cannot be empty");
  decode_utf8(t, InvalidUtf8::Error, "special token");
  const int32_t id = model_.vocab().add(t);
  if (size_t(id) >= bytes_of_.size()) {
    bytes_of_.push_back(t);  // an added token decodes to its own text
    spaces_.push_back(count_spaces(to_u32(t)));
  }
  if (size_t(id) >= special_ids_.size()) special_ids_.resize(size_t(id) + 1, false);
  if (special_ids_[size_t(id)]) return false;
  special_ids_[size_t(id)] = true;
  specials_.push_back({to_u32(t), id, lstrip});
  // Longest first: Hugging Face matches added tokens leftmost-longest.
  std::stable_sort(specials_.begin(), specials_.end(), [](const Special& a, const Special& b) { return a.content.size() > b.content.size(); });
  return true;
}

bool RobertaTokenizer::is_special(int32_t id) const { return id >= 0 && size_t(id) < special_ids_.size() && special_ids_[size_t(id)]; }

const std::string& RobertaTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || size_t(id) >= vocab_size())
    throw std::out_of_range(fmt::format("[RobertaTokenizer] id {} is outside the vocabulary of {}", id, vocab_size()));
  return model_.vocab().token(id);
}

bool RobertaTokenizer::starts_word(int32_t id) const {
  id_to_token(id);  // range check
  if (is_special(id) || bytes_of_[size_t(id)].empty()) return true;
  const auto b = static_cast<unsigned char>(bytes_of_[size_t(id)][0]);
  const bool continues = b >= 0x80 || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
  return !continues;
}

// Pre-tokenizes and merges cps[begin, end) of the text; `origin` maps an index of `cps` to the
// original text's code point (they differ when a prefix space was put in front).
template <class Origin, class Push>
static void encode_pieces(const BpeModel& model, const std::vector<char32_t>& cps, std::string_view utf8,
                          const std::vector<size_t>& byte_at, size_t begin, size_t end, Origin origin, Push push) {
  thread_local std::vector<std::pair<size_t, size_t>> pieces;
  thread_local std::vector<std::pair<int32_t, uint32_t>> toks;
  pieces.clear();
  split_gpt2(cps, begin, end, pieces);
  for (const auto& [a, b] : pieces) {
    toks.clear();
    model.encode_word(utf8.substr(byte_at[a], byte_at[b] - byte_at[a]), toks);
    size_t c = a, p = byte_at[a];
    for (const auto& [id, len] : toks) {
      const size_t first = c, last_byte = p + len - 1;
      while (byte_at[c + 1] <= last_byte) ++c;  // a token may end inside a character: it spans it all
      const size_t last = c;
      p += len;
      if (byte_at[c + 1] <= p) ++c;
      push(id, origin(first), origin(last) + 1);
    }
  }
}

void RobertaTokenizer::encode_segment(const std::vector<char32_t>& cps, const std::string& utf8, const std::vector<size_t>& byte_at,
                                      size_t begin, size_t end, std::vector<Token>& out) const {
  auto push = [&](int32_t id, size_t s, size_t e) { out.push_back(trimmed(id, s, e, spaces_[size_t(id)], out.empty(), opt_)); };
  if (begin == end) return;
  if (!opt_.add_prefix_space || cps[begin] == ' ') {
    encode_pieces(model_, cps, utf8, byte_at, begin, end, [](size_t k) { return k; }, push);
    return;
  }
  // " " + the segment, the space standing for the segment's first character (as HF's prepend).
  std::vector<char32_t> local(cps.begin() + long(begin), cps.begin() + long(end));
  local.insert(local.begin(), ' ');
  std::string local_utf8 = " " + utf8.substr(byte_at[begin], byte_at[end] - byte_at[begin]);
  std::vector<size_t> local_at(local.size() + 1);
  local_at[0] = 0;
  for (size_t k = 1; k <= local.size(); ++k) local_at[k] = 1 + byte_at[begin + k - 1] - byte_at[begin];
  encode_pieces(model_, local, local_utf8, local_at, 0, local.size(), [begin](size_t k) { return begin + (k ? k - 1 : 0); }, push);
}

std::vector<Token> RobertaTokenizer::tokenize(std::string_view text, const std::string& where) const {
  const std::vector<char32_t> cps = decode_utf8(text, opt_.invalid_utf8, where);
  const std::string utf8 = opt_.invalid_utf8 == InvalidUtf8::Replace ? encode_utf8(std::u32string(cps.begin(), cps.end())) : std::string(text);
  std::vector<size_t> byte_at(cps.size() + 1, 0);
  for (size_t i = 0; i < cps.size(); ++i) byte_at[i + 1] = byte_at[i] + (cps[i] < 0x80 ? 1 : cps[i] < 0x800 ? 2 : cps[i] < 0x10000 ? 3 : 4);
  std::vector<Token> out;
  out.reserve(text.size() / 3 + 2);
  size_t seg = 0;
  for (size_t i = 0; i < cps.size();) {
    const Special* hit = special_at(cps, i, specials_);
    if (!hit) {
      ++i;
      continue;
    }
    size_t start = i;
    if (hit->lstrip)
      while (start > seg && is_whitespace(cps[start - 1])) --start;
    encode_segment(cps, utf8, byte_at, seg, start, out);
    // The matched text (with the whitespace lstrip took) is the token trim_offsets looks at.
    const size_t stop = i + hit->content.size();
    const auto spaces = count_spaces(std::u32string(cps.begin() + long(start), cps.begin() + long(stop)));
    out.push_back(trimmed(hit->id, start, stop, spaces, out.empty(), opt_));
    i += hit->content.size();
    seg = i;
  }
  encode_segment(cps, utf8, byte_at, seg, cps.size(), out);
  return out;
}

std::string RobertaTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= vocab_size())
      throw std::out_of_range(fmt::format("[decode] id {} is outside the vocabulary of {}", id, vocab_size()));
    if (skip_special_tokens && is_special(id)) continue;
    bytes += bytes_of_[size_t(id)];
  }
  return utf8_lossy(bytes);
}

}  // namespace xg::text
