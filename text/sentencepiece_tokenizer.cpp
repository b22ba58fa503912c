#include "text/sentencepiece_tokenizer.hpp"

#include <fmt/format.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utf8proc.h>
#include <algorithm>
#include <cctype>
#include <cstdint>

#include "text/corpus_summary.hpp"
#include "text/hf_tokenizer_files.hpp"
#include "text/sentencepiece_model_check.hpp"
#include "text/tokenizer_json.hpp"
#include "text/unicode.hpp"
#include "util/atomic_file.hpp"
#include "util/child_process.hpp"
#include "util/threads.hpp"

namespace fs = std::filesystem;

namespace xg::text {

namespace {
constexpr char32_t kWordMark = U'\u2581';
const std::string kWordMarkUtf8 = "\u2581";

// ALBERT's create_pretraining_data _is_start_piece_sp: a piece starts a word when it carries the
// word mark, is "<...>", is one ASCII punctuation character, or holds any character besides
// ASCII letters and punctuation (digits, accented and CJK text: each such piece its own word).
bool is_start_piece(const std::string& piece) {
  // the reference's set, which has no apostrophe (a piece with one, "'s", starts a word)
  static const std::string kPunctuation = "!\"#$%&()*+,-./:;?@[\\]^_`{|}~";
  if (piece.rfind(kWordMarkUtf8, 0) == 0 || piece.rfind("<", 0) == 0) return true;
  if (piece.size() == 1 && kPunctuation.find(piece[0]) != std::string::npos) return true;
  for (const char c : piece)
    if (!std::isalpha(static_cast<unsigned char>(c)) && kPunctuation.find(c) == std::string::npos) return true;  // bytes >= 0x80 too
  return false;
}

// Python's str.isdigit for the pieces the library returns: decimal digits (Nd) and the
// superscript/circled digits NFKD leaves none of, so Nd is what remains after preprocessing.
bool is_digit(char32_t c) { return utf8proc_category(utf8proc_int32_t(c)) == UTF8PROC_CATEGORY_ND; }

// NFKD of one code point, appended to out.
void compat_decompose(char32_t c, std::u32string& out) {
  utf8proc_int32_t buf[32];
  int last = 0;
  const auto n = utf8proc_decompose_char(utf8proc_int32_t(c), buf, 32,
                                         utf8proc_option_t(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT), &last);
  if (n < 0 || n > 32) { out += c; return; }
  for (utf8proc_ssize_t i = 0; i < n; ++i) out += char32_t(buf[i]);
}

// Replaces each non-overlapping "cc" with '"', keeping the first character's origin.
void replace_pair(std::u32string& s, std::vector<size_t>& at, char32_t c) {
  std::u32string out;
  std::vector<size_t> out_at;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool pair = i + 1 < s.size() && s[i] == c && s[i + 1] == c;
    out += pair ? U'"' : s[i];
    out_at.push_back(at[i]);
    if (pair) ++i;
  }
  s.swap(out);
  at.swap(out_at);
}

std::u32string to_u32(const std::string& s) {
  const std::vector<char32_t> v = decode_utf8(s);
  return std::u32string(v.begin(), v.end());
}

// Byte offset -> code-point index in a UTF-8 string (size bytes + 1 entries).
std::vector<size_t> code_point_of_byte(const std::string& s) {
  std::vector<size_t> at(s.size() + 1, 0);
  size_t cp = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && i > 0) ++cp;
    at[i] = cp;
  }
  at[s.size()] = s.empty() ? 0 : cp + 1;
  return at;
}

void check(const sentencepiece::util::Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error(fmt::format("[sentencepiece] {}: {}", what, s.ToString()));
}
}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path, SentencePieceOptions opt)
    : opt_(opt), sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  if (!fs::is_regular_file(model_path))
    throw std::runtime_error(fmt::format("[SentencePieceTokenizer] {}: no such file", model_path));
  std::ifstream in(model_path, std::ios::binary);
  const std::string serialized((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) throw std::runtime_error(fmt::format("[SentencePieceTokenizer] {}: cannot read", model_path));
  check_sentencepiece_model(serialized, model_path);  // what would end the process inside the library
  const auto status = sp_->LoadFromSerializedProto(serialized);
  if (!status.ok())
    throw std::runtime_error(fmt::format("[SentencePieceTokenizer] {}: not a SentencePiece model: {}", model_path,
                                         status.ToString()));
  init(model_path);
}

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& serialized, const std::string& where, SentencePieceOptions opt,
                                               FromBytes)
    : opt_(opt), sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  check_sentencepiece_model(serialized, where);
  const auto status = sp_->LoadFromSerializedProto(serialized);
  if (!status.ok())
    throw std::runtime_error(fmt::format("[SentencePieceTokenizer] {}: not a SentencePiece model: {}", where, status.ToString()));
  init(where);
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_serialized(const std::string& serialized,
                                                                                const std::string& where, SentencePieceOptions opt) {
  return std::unique_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(serialized, where, opt, FromBytes{}));
}

void SentencePieceTokenizer::init(const std::string& model_path) {
  for (int id = 0; id < sp_->GetPieceSize(); ++id) check_sentencepiece_score(id, sp_->IdToPiece(id), sp_->GetScore(id), model_path);
  special_tokens_ = {"<unk>", "[CLS]", "[SEP]", "<pad>", "[MASK]", "", "", {}};
  special_ids_.assign(sp_->GetPieceSize(), false);
  for (const std::string* t : {&special_tokens_.unk, &special_tokens_.cls, &special_tokens_.sep, &special_tokens_.pad,
                               &special_tokens_.mask}) {
    const int id = sp_->PieceToId(*t);
    // PieceToId answers unk's id for an absent piece.
    if (id < 0 || (sp_->IdToPiece(id) != *t))
      throw std::runtime_error(fmt::format("[SentencePieceTokenizer] {}: no piece '{}' (ALBERT needs it)", model_path, *t));
    special_ids_[id] = true;
    specials_.push_back({to_u32(*t), id, t == &special_tokens_.mask});
  }
  std::stable_sort(specials_.begin(), specials_.end(),
                   [](const SpecialMatch& a, const SpecialMatch& b) { return a.content.size() > b.content.size(); });
  word_starts_.resize(sp_->GetPieceSize());
  for (int id = 0; id < sp_->GetPieceSize(); ++id) word_starts_[id] = is_start_piece(sp_->IdToPiece(id));
  const int32_t cls = cls_id(), sep = sep_id();
  using P = SpecialTokenTemplate;
  template_.single = {{cls, 0}, {P::kFirstText, 0}, {sep, 0}};
  template_.pair = {{cls, 0}, {P::kFirstText, 0}, {sep, 0}, {P::kSecondText, 1}, {sep, 1}};
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_pretrained(const std::string& dir) {
  const TokenizerConfig c = TokenizerConfig::read(dir);
  SentencePieceOptions o;
  o.do_lower_case = c.get_bool("do_lower_case").value_or(true);
  o.remove_space = c.get_bool("remove_space").value_or(true);
  o.keep_accents = c.get_bool("keep_accents").value_or(false);
  o.model_max_length = c.get_size("model_max_length").value_or(0);
  // spiece.model, or else tokenizer.json alone (as transformers 5 saves a tokenizer)
  const bool from_json = !fs::exists(fs::path(dir) / "spiece.model") && c.tokenizer_json();
  auto tok = from_json ? from_serialized(unigram_model_from_tokenizer_json(c, o), c.tokenizer_json_path(), o)
                       : std::make_unique<SentencePieceTokenizer>(c.required_file("spiece.model", "AlbertTokenizer"), o);
  const SpecialTokens& st = tok->special_tokens();
  c.check_fixed_special_tokens({st.unk, st.cls, st.sep, st.pad, st.mask});  // added tokens would be split as text
  return tok;
}

std::u32string SentencePieceTokenizer::preprocess(std::string_view text, std::vector<size_t>& origin,
                                                  const std::string& where) const {
  const std::vector<char32_t> cps = decode_utf8(text, InvalidUtf8::Error, where);  // names `where` and the byte
  // remove_space: " ".join(text.strip().split()); a run of whitespace becomes one ' ' (its origin
  // the run's first character), none at either end.
  std::u32string spaced;
  std::vector<size_t> at;
  size_t pending = SIZE_MAX;  // first whitespace of the current run
  for (size_t i = 0; i < cps.size(); ++i) {
    if (opt_.remove_space && is_python_space(cps[i])) {
      if (pending == SIZE_MAX) pending = i;
      continue;
    }
    if (pending != SIZE_MAX && !spaced.empty()) {
      spaced += U' ';
      at.push_back(pending);
    }
    pending = SIZE_MAX;
    spaced += cps[i];
    at.push_back(i);
  }
  // `` and '' -> ", each left to right without overlap as str.replace.
  replace_pair(spaced, at, U'`');
  replace_pair(spaced, at, U'\'');
  std::u32string out;
  origin.clear();
  for (size_t i = 0; i < spaced.size(); ++i) {
    std::u32string parts;
    if (opt_.keep_accents) parts = spaced[i];
    else compat_decompose(spaced[i], parts);  // NFKD
    for (char32_t c : parts) {
      if (!opt_.keep_accents && combining_class(c) != 0) continue;
      std::u32string low;
      if (opt_.do_lower_case) to_lower(c, low); else low = c;
      for (char32_t l : low) { out += l; origin.push_back(at[i]); }
    }
  }
  return out;
}

std::vector<Token> SentencePieceTokenizer::tokenize(std::string_view text, const std::string& where) const {
  const std::vector<char32_t> cps = decode_utf8(text, InvalidUtf8::Error, where);  // names `where` and the byte
  std::vector<size_t> byte_at(cps.size() + 1, 0);
  for (size_t i = 0; i < cps.size(); ++i)
    byte_at[i + 1] = byte_at[i] + (cps[i] < 0x80 ? 1 : cps[i] < 0x800 ? 2 : cps[i] < 0x10000 ? 3 : 4);
  std::vector<Token> out;
  auto plain = [&](size_t begin, size_t end) {
    if (end <= begin) return;
    const auto part = tokenize_plain(text.substr(byte_at[begin], byte_at[end] - byte_at[begin]), begin, where);
    out.insert(out.end(), part.begin(), part.end());
  };
  size_t seg = 0;
  for (size_t i = 0; i < cps.size();) {
    const SpecialMatch* hit = special_at(cps, i, specials_);
    if (!hit) {
      ++i;
      continue;
    }
    size_t start = i;
    if (hit->lstrip)
      while (start > seg && is_whitespace(cps[start - 1])) --start;
    plain(seg, start);
    out.push_back({hit->id, i, i + hit->content.size()});
    i += hit->content.size();
    seg = i;
  }
  plain(seg, cps.size());
  return out;
}

std::vector<Token> SentencePieceTokenizer::tokenize_plain(std::string_view text, size_t first, const std::string& where) const {
  std::vector<size_t> origin;
  const std::u32string pre = preprocess(text, origin, where);
  const std::string utf8 = encode_utf8(pre);
  sentencepiece::ImmutableSentencePieceText spt;
  check(sp_->Encode(utf8, spt.mutable_proto()), where);
  const std::vector<size_t> cp_at = code_point_of_byte(utf8);
  const size_t text_len = decode_utf8(text).size();
  // Library span [begin, end) in bytes of `utf8` -> code points of the original text.
  auto span = [&](size_t b, size_t e) -> std::pair<size_t, size_t> {
    const size_t cb = cp_at[b], ce = cp_at[e];
    const size_t start = cb < origin.size() ? origin[cb] : text_len;
    const size_t end = ce == 0 ? start : origin[ce - 1] + 1;
    return {first + start, first + std::max(start, end)};
  };
  std::vector<Token> out;
  for (const auto& p : spt.pieces()) {
    const auto [start, end] = span(p.begin(), p.end());
    const std::u32string piece = to_u32(p.piece());
    if (piece.size() > 1 && piece.back() == U',' && is_digit(piece[piece.size() - 2])) {
      // AlbertTokenizer._tokenize: re-encode the piece without its ',' and word marks.
      std::u32string body;
      for (size_t i = 0; i + 1 < piece.size(); ++i)
        if (piece[i] != kWordMark) body += piece[i];
      std::vector<std::string> sub;
      check(sp_->Encode(encode_utf8(body), &sub), where);
      if (piece[0] != kWordMark && !sub.empty() && sub[0].rfind(kWordMarkUtf8, 0) == 0) {
        if (sub[0] == kWordMarkUtf8) sub.erase(sub.begin());
        else sub[0] = sub[0].substr(kWordMarkUtf8.size());
      }
      const size_t comma = end > start ? end - 1 : start;
      for (const auto& s : sub) out.push_back({sp_->PieceToId(s), start, comma});
      out.push_back({sp_->PieceToId(","), comma, end});
    } else {
      out.push_back({static_cast<int32_t>(p.id()), start, end});
    }
  }
  return out;
}

std::string SentencePieceTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  // AlbertTokenizer.convert_tokens_to_string.
  std::string out;
  std::vector<int> run;
  bool prev_special = false;
  for (int32_t id : ids) {
    id_to_token(id);  // range check
    if (is_special(id)) {
      if (skip_special_tokens) continue;
      if (!prev_special) out += ' ';
      std::string text;
      check(sp_->Decode(run, &text), "decode");
      out += text + sp_->IdToPiece(id);
      run.clear();
      prev_special = true;
    } else {
      run.push_back(id);
      prev_special = false;
    }
  }
  std::string text;
  check(sp_->Decode(run, &text), "decode");
  out += text;
  // str.strip()
  const size_t b = out.find_first_not_of(" \t\n\r\f\v");
  if (b == std::string::npos) return "";
  return out.substr(b, out.find_last_not_of(" \t\n\r\f\v") - b + 1);
}

size_t SentencePieceTokenizer::vocab_size() const { return static_cast<size_t>(sp_->GetPieceSize()); }

const std::string& SentencePieceTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || id >= sp_->GetPieceSize())
    throw std::out_of_range(fmt::format("[SentencePieceTokenizer] id {} outside the vocabulary of {}", id, vocab_size()));
  return sp_->IdToPiece(id);
}

int32_t SentencePieceTokenizer::token_to_id(std::string_view token) const {
  const int id = sp_->PieceToId(std::string(token));
  return sp_->IdToPiece(id) == token ? id : -1;
}

bool SentencePieceTokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < special_ids_.size() && special_ids_[id];
}

bool SentencePieceTokenizer::starts_word(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < word_starts_.size() && word_starts_[id];
}

void SentencePieceTokenizer::save_pretrained(const std::string& dir) const {
  fs::create_directories(dir);
  write_text_atomically((fs::path(dir) / "spiece.model").string(), sp_->serialized_model_proto());
  write_tokenizer_config(dir, *this, {{"do_lower_case", opt_.do_lower_case},
                                      {"remove_space", opt_.remove_space},
                                      {"keep_accents", opt_.keep_accents}});
  write_tokenizer_json(dir, unigram_tokenizer_json(*this));
}

namespace {
// A file's lines without those `skip` names, for SentencePieceTrainer in place of its own reader of
// `input` (which takes each std::getline line as a sentence too).
class LinesExcept : public sentencepiece::SentenceIterator {
 public:
  LinesExcept(const std::string& path, std::function<bool(size_t)> skip) : in_(path, std::ios::binary), skip_(std::move(skip)) {
    if (!in_) throw std::runtime_error(fmt::format("[train_sentencepiece] {}: cannot open", path));
    Next();
  }
  bool done() const override { return done_; }
  void Next() override {
    while (std::getline(in_, line_))
      if (!skip_(++number_)) return;
    done_ = true;
  }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }  // ok: a read error ends the lines early

 private:
  std::ifstream in_;
  std::function<bool(size_t)> skip_;
  std::string line_;
  size_t number_ = 0;
  bool done_ = false;
};
}  // namespace

void train_sentencepiece(const std::string& corpus_path, size_t vocab_size, const std::string& out_model_path,
                         size_t threads, bool case_fold, const std::function<bool(size_t line)>& skip_line) {
  if (!fs::is_regular_file(corpus_path))
    throw std::runtime_error(fmt::format("[train_sentencepiece] {}: no such file", corpus_path));
  // What libsentencepiece would end the process over (a CHECK), or skip with only a log line.
  const CorpusSummary corpus = summarize_corpus(corpus_path, skip_line);
  if (!corpus.has_words)
    throw std::invalid_argument(fmt::format("[train_sentencepiece] {}: the corpus has no words (only whitespace or control "
                                            "characters{}): nothing to learn pieces from",
                                            corpus_path, skip_line ? ", in the lines not held out" : ""));
  constexpr size_t kMetaPieces = 5;  // <pad>, <unk>, [CLS], [SEP], [MASK]
  if (vocab_size <= kMetaPieces)
    throw std::invalid_argument(fmt::format("[train_sentencepiece] a vocabulary of {} pieces: it needs more than its {} special "
                                            "ones (<pad>, <unk>, [CLS], [SEP], [MASK])", vocab_size, kMetaPieces));
  const std::string prefix = out_model_path + ".training";
  const size_t n = threads ? threads : default_thread_count();
  std::unordered_map<std::string, std::string> args = {
      {"input", corpus_path}, {"model_prefix", prefix}, {"model_type", "unigram"},
      {"vocab_size", std::to_string(vocab_size)}, {"pad_id", "0"}, {"unk_id", "1"}, {"bos_id", "-1"},
      {"eos_id", "-1"}, {"control_symbols", "[CLS],[SEP],[MASK]"}, {"character_coverage", "1.0"},
      {"num_threads", std::to_string(n)}, {"minloglevel", "1"},  // warnings only: not a line per EM step
      // every line learned from, however long (the library skips lines over 4192 bytes by default)
      {"max_sentence_length", std::to_string(std::max<size_t>(4192, corpus.longest_line + 1))}};
  if (case_fold) args["normalization_rule_name"] = "nmt_nfkc_cf";
  const std::string what = fmt::format("[train_sentencepiece] training on {}", corpus_path);
  try {
    // libsentencepiece ends the process on some inputs (a CHECK) instead of returning an error
    run_in_child_process([&] {
      std::unique_ptr<LinesExcept> lines;
      if (skip_line) {
        args.erase("input");
        lines = std::make_unique<LinesExcept>(corpus_path, skip_line);
      }
      const sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(args, lines.get());
      std::smatch most;
      const std::string message = status.ToString();
      if (std::regex_search(message, most, std::regex("Vocabulary size too high .*<= ([0-9]+)")))
        throw std::invalid_argument(fmt::format("{}: a vocabulary of {} pieces is more than this corpus yields (at most {}): "
                                                "ask for fewer, or train on more text", what, vocab_size, most[1].str()));
      if (std::regex_search(message, most, std::regex("smaller than required_chars\\. [0-9]+ vs ([0-9]+)")))
        throw std::invalid_argument(fmt::format("{}: a vocabulary of {} pieces is too small: this corpus needs at least {} (a "
                                                "piece for each of its characters, and the special ones)",
                                                what, vocab_size, most[1].str()));
      check(status, what);
    }, what);
  } catch (...) {
    std::error_code ec;
    fs::remove(prefix + ".model", ec);
    fs::remove(prefix + ".vocab", ec);
    throw;
  }
  fs::rename(prefix + ".model", out_model_path);
  fs::remove(prefix + ".vocab");
}

}  // namespace xg::text
