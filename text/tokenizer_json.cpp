#include "text/tokenizer_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sentencepiece_processor.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include "text/protobuf_wire.hpp"
#include "util/atomic_file.hpp"
#include "util/base64.hpp"
#include "util/json_input.hpp"

using nlohmann::json;

namespace xg::text {

namespace {

// Reads one tokenizer.json; each check names the file and the field (as "model.type").
class Reader {
 public:
  explicit Reader(const TokenizerConfig& c, const std::string& needed_by) : path_(c.tokenizer_json_path()), needed_by_(needed_by) {
    if (!c.tokenizer_json()) throw std::runtime_error(fmt::format("[load_tokenizer] {}: missing ({} needs it)", path_, needed_by));
    doc_ = c.tokenizer_json();
  }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw std::runtime_error(fmt::format("[load_tokenizer] {}: {} {}", path_, field, what));
  }
  // doc[part] (an object, or null when `nullable`)
  const json& part(const char* name, bool nullable = false) const {
    static const json null;
    if (!doc_->contains(name) || (*doc_)[name].is_null()) {
      if (nullable) return null;
      fail(name, fmt::format("is missing ({} needs one)", needed_by_));
    }
    const json& v = (*doc_)[name];
    if (!v.is_object()) fail(name, fmt::format("must be an object, got {}", json_summary(v)));
    return v;
  }
  // part.type, which must be one of `types`
  std::string type_of(const json& p, const char* name, std::initializer_list<const char*> types) const {
    const std::string t = p.contains("type") && p["type"].is_string() ? p["type"].get<std::string>() : "";
    for (const char* ok : types)
      if (t == ok) return t;
    fail(fmt::format("{}.type", name), fmt::format("is '{}': {} supports {}", t, needed_by_, fmt::join(types, " or ")));
  }
  template <class T>
  T get(const json& p, const char* name, const char* key, T fallback) const {
    if (!p.contains(key) || p[key].is_null()) return fallback;
    try {
      return p[key].get<T>();
    } catch (const json::exception&) {
      fail(fmt::format("{}.{}", name, key), fmt::format("has the wrong type: {}", json_summary(p[key])));
    }
  }
  // Refuses part.key unless it equals `wanted` (a setting these tokenizers do not implement).
  void require(const json& p, const char* name, const char* key, const json& wanted) const {
    if (p.contains(key) && !p[key].is_null() && p[key] != wanted)
      fail(fmt::format("{}.{}", name, key), fmt::format("is {}; {} supports {} only", p[key].dump(), needed_by_, wanted.dump()));
  }
  // model.vocab {"token": id} with ids 0..n-1 each once, as tokens by id.
  std::vector<std::string> vocab(const json& model) const {
    if (!model.contains("vocab") || !model["vocab"].is_object()) fail("model.vocab", "must be an object of token: id");
    const json& v = model["vocab"];
    if (v.empty()) fail("model.vocab", "is empty");
    std::vector<std::string> tokens(v.size());
    std::vector<bool> seen(v.size());
    for (const auto& [token, id] : v.items()) {
      if (!id.is_number_unsigned() || id.get<uint64_t>() >= tokens.size())
        fail("model.vocab", fmt::format("gives '{}' the id {}, not one of 0..{}", token, id.dump(), tokens.size() - 1));
      const size_t i = id.get<size_t>();
      if (seen[i]) fail("model.vocab", fmt::format("gives the id {} to '{}' and '{}'", i, tokens[i], token));
      seen[i] = true;
      tokens[i] = token;
    }
    return tokens;
  }
  // A post-processor's [CLS]-like and [SEP]-like tokens: TemplateProcessing's single template
  // must be CLS $A SEP; BertProcessing and RobertaProcessing name them as [token, id].
  std::pair<std::string, std::string> cls_sep(const json& post) const {
    const std::string type = type_of(post, "post_processor", {"TemplateProcessing", "BertProcessing", "RobertaProcessing"});
    if (type != "TemplateProcessing") {
      auto token = [&](const char* key) {
        if (!post.contains(key) || !post[key].is_array() || post[key].empty() || !post[key][0].is_string())
          fail(fmt::format("post_processor.{}", key), "must be [token, id]");
        return post[key][0].get<std::string>();
      };
      return {token("cls"), token("sep")};
    }
    const json& single = post.contains("single") ? post["single"] : json();
    auto special = [&](size_t i) -> std::string {
      if (single.is_array() && single.size() == 3 && single[i].contains("SpecialToken") && single[i]["SpecialToken"].contains("id") &&
          single[i]["SpecialToken"]["id"].is_string())
        return single[i]["SpecialToken"]["id"].get<std::string>();
      fail("post_processor.single", fmt::format("is {}; {} supports [CLS-like] $A [SEP-like] only", json_summary(single), needed_by_));
    };
    const std::string cls = special(0), sep = special(2);  // checks the shape first
    if (!single[1].is_object() || !single[1].contains("Sequence")) fail("post_processor.single", "has no sequence A in the middle");
    return {cls, sep};
  }

 private:
  std::string path_, needed_by_;
  const json* doc_ = nullptr;
};

json added_tokens_json(const Tokenizer& tok, const std::string& lstrip_token = "") {
  json out = json::array();
  for (size_t id = 0; id < tok.vocab_size(); ++id)
    if (tok.is_special(int32_t(id))) {
      const std::string& t = tok.id_to_token(int32_t(id));
      out.push_back({{"id", id}, {"content", t}, {"single_word", false}, {"lstrip", t == lstrip_token}, {"rstrip", false},
                     {"normalized", false}, {"special", true}});
    }
  return out;
}

json special_token_piece(const std::string& token, int type_id) { return {{"SpecialToken", {{"id", token}, {"type_id", type_id}}}}; }

// TemplateProcessing "CLS $A SEP" and "CLS $A SEP $B:1 SEP:1", as BERT's and ALBERT's files carry it.
json cls_sep_template_json(const Tokenizer& tok, const std::string& cls, const std::string& sep) {
  const json a = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, b = {{"Sequence", {{"id", "B"}, {"type_id", 1}}}};
  auto special = [&](const std::string& t) { return json{{"id", t}, {"ids", {tok.token_to_id(t)}}, {"tokens", {t}}}; };
  return {{"type", "TemplateProcessing"},
          {"single", {special_token_piece(cls, 0), a, special_token_piece(sep, 0)}},
          {"pair", {special_token_piece(cls, 0), a, special_token_piece(sep, 0), b, special_token_piece(sep, 1)}},
          {"special_tokens", {{cls, special(cls)}, {sep, special(sep)}}}};
}

}  // namespace

Vocab wordpiece_from_tokenizer_json(const TokenizerConfig& c, TokenizerOptions& o) {
  const Reader r(c, "BertTokenizer");
  const json& model = r.part("model");
  r.type_of(model, "model", {"WordPiece"});
  r.require(model, "model", "continuing_subword_prefix", "##");
  o.unk_token = r.get<std::string>(model, "model", "unk_token", o.unk_token);
  o.max_input_chars_per_word = r.get<size_t>(model, "model", "max_input_chars_per_word", o.max_input_chars_per_word);
  const json& norm = r.part("normalizer");
  r.type_of(norm, "normalizer", {"BertNormalizer"});
  o.clean_text = r.get<bool>(norm, "normalizer", "clean_text", true);
  o.handle_chinese_chars = r.get<bool>(norm, "normalizer", "handle_chinese_chars", true);
  o.lowercase = r.get<bool>(norm, "normalizer", "lowercase", true);
  o.strip_accents = norm.contains("strip_accents") && !norm["strip_accents"].is_null()
                        ? std::optional<bool>(r.get<bool>(norm, "normalizer", "strip_accents", false))
                        : std::nullopt;
  r.type_of(r.part("pre_tokenizer"), "pre_tokenizer", {"BertPreTokenizer"});
  std::tie(o.cls_token, o.sep_token) = r.cls_sep(r.part("post_processor"));
  return Vocab(r.vocab(model));
}

BpeModel byte_level_bpe_from_tokenizer_json(const TokenizerConfig& c, RobertaTokenizerOptions& o) {
  const Reader r(c, "RobertaTokenizer");
  const json& model = r.part("model");
  r.type_of(model, "model", {"BPE"});
  for (const auto& [key, wanted] : {std::pair<const char*, json>{"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""},
                                    {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false}})
    r.require(model, "model", key, wanted);
  if (model.contains("dropout") && !model["dropout"].is_null()) r.fail("model.dropout", "is set; BPE dropout is for training only");
  if (!r.part("normalizer", /*nullable=*/true).is_null()) r.fail("normalizer", "is set; RobertaTokenizer normalizes nothing");
  const json& pre = r.part("pre_tokenizer");
  r.type_of(pre, "pre_tokenizer", {"ByteLevel"});
  r.require(pre, "pre_tokenizer", "use_regex", true);
  o.add_prefix_space = r.get<bool>(pre, "pre_tokenizer", "add_prefix_space", false);
  const json& post = r.part("post_processor");
  std::tie(o.cls_token, o.sep_token) = r.cls_sep(post);
  o.trim_offsets = r.get<bool>(post, "post_processor", "trim_offsets", true);
  if (!model.contains("merges") || !model["merges"].is_array()) r.fail("model.merges", "must be a list");
  std::vector<Merge> merges;
  for (const json& m : model["merges"]) {
    if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // tokenizers 0.20 and later: ["a", "b"]
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else if (const std::string s = m.is_string() ? m.get<std::string>() : ""; s.find(' ') != std::string::npos && s.find(' ') > 0 &&
                                                                                 s.find(' ') + 1 < s.size()) {  // earlier: "a b"
      merges.emplace_back(s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1));
    } else {
      r.fail(fmt::format("model.merges[{}]", merges.size()), fmt::format("is {}, not [\"a\", \"b\"] or \"a b\"", json_summary(m)));
    }
  }
  return BpeModel(Vocab(r.vocab(model)), std::move(merges), c.tokenizer_json_path() + " model.merges");
}

namespace {
const char* const kMetaspace = "\u2581";  // SentencePiece's word-start mark

json metaspace_json() { return {{"type", "Metaspace"}, {"replacement", kMetaspace}, {"prepend_scheme", "always"}, {"split", true}}; }
json quote_replacement(const char* pattern) { return {{"type", "Replace"}, {"pattern", {{"String", pattern}}}, {"content", "\""}}; }

// SentencePiece's piece types (ModelProto.SentencePiece.Type).
enum PieceType { kNormal = 1, kUnknown = 2, kControl = 3 };

// A Unigram ModelProto as libsentencepiece loads it.
std::string unigram_model_proto(const std::vector<std::pair<std::string, float>>& pieces, const std::set<int64_t>& control,
                                int64_t unk_id, int64_t pad_id, std::string_view charsmap, bool add_dummy_prefix) {
  WireWriter model;
  for (size_t id = 0; id < pieces.size(); ++id) {
    WireWriter piece;
    piece.bytes_field(1, pieces[id].first);
    piece.float_field(2, pieces[id].second);
    piece.varint_field(3, int64_t(id) == unk_id ? kUnknown : control.count(int64_t(id)) ? kControl : kNormal);
    model.bytes_field(1, piece.bytes());
  }
  WireWriter trainer;  // TrainerSpec: model_type UNIGRAM, vocab_size, unk/bos/eos/pad ids (ALBERT's: no bos, eos)
  trainer.varint_field(3, 1);
  trainer.varint_field(4, int64_t(pieces.size()));
  trainer.varint_field(40, unk_id);
  trainer.varint_field(41, -1);
  trainer.varint_field(42, -1);
  trainer.varint_field(43, pad_id);
  model.bytes_field(2, trainer.bytes());
  WireWriter normalizer;  // NormalizerSpec: name, precompiled_charsmap, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces
  normalizer.bytes_field(1, charsmap.empty() ? "identity" : "nmt_nfkc");
  if (!charsmap.empty()) normalizer.bytes_field(2, charsmap);
  normalizer.varint_field(3, add_dummy_prefix);
  normalizer.varint_field(4, 1);
  normalizer.varint_field(5, 1);
  model.bytes_field(3, normalizer.bytes());
  return model.bytes();
}
}  // namespace

std::string unigram_model_from_tokenizer_json(const TokenizerConfig& c, SentencePieceOptions& o) {
  const Reader r(c, "AlbertTokenizer");
  const json& model = r.part("model");
  r.type_of(model, "model", {"Unigram"});
  r.require(model, "model", "byte_fallback", false);
  if (!model.contains("vocab") || !model["vocab"].is_array() || model["vocab"].empty())
    r.fail("model.vocab", "must be a non-empty list of [piece, score]");
  std::vector<std::pair<std::string, float>> pieces;
  for (const json& p : model["vocab"]) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_number())
      r.fail(fmt::format("model.vocab[{}]", pieces.size()), fmt::format("is {}, not [piece, score]", json_summary(p)));
    pieces.emplace_back(p[0].get<std::string>(), p[1].get<float>());
  }
  const int64_t unk_id = r.get<int64_t>(model, "model", "unk_id", -1);
  if (unk_id < 0 || size_t(unk_id) >= pieces.size())
    r.fail("model.unk_id", fmt::format("must be the id of one of the {} pieces", pieces.size()));

  // ALBERT's normalizer: `` and '' to ", NFKD with StripAccents (keep_accents off), Lowercase, the model's character map
  const json& norm = r.part("normalizer", /*nullable=*/true);
  std::vector<json> steps;
  if (!norm.is_null()) {
    if (r.type_of(norm, "normalizer", {"Sequence", "Replace", "NFKD", "StripAccents", "Lowercase", "Precompiled"}) == "Sequence") {
      if (!norm.contains("normalizers") || !norm["normalizers"].is_array()) r.fail("normalizer.normalizers", "must be a list");
      steps = norm["normalizers"].get<std::vector<json>>();
    } else {
      steps = {norm};
    }
  }
  size_t quotes = 0;
  bool nfkd = false, strip_accents = false, lowercase = false;
  std::string charsmap;
  for (const json& step : steps) {
    const std::string type = r.type_of(step, "normalizer", {"Replace", "NFKD", "StripAccents", "Lowercase", "Precompiled"});
    if (type == "Replace") {
      if (step != quote_replacement("``") && step != quote_replacement("''"))
        r.fail("normalizer", fmt::format("has the replacement {}; AlbertTokenizer replaces only `` and '' with \"", step.dump()));
      ++quotes;
    }
    nfkd |= type == "NFKD";
    strip_accents |= type == "StripAccents";
    lowercase |= type == "Lowercase";
    if (type == "Precompiled")
      charsmap = base64_decode(r.get<std::string>(step, "normalizer", "precompiled_charsmap", ""),
                               c.tokenizer_json_path() + " normalizer's precompiled_charsmap");
  }
  if (quotes != 2) r.fail("normalizer", "lacks ALBERT's replacements of `` and '' with \"");
  if (nfkd != strip_accents) r.fail("normalizer", "has one of NFKD and StripAccents without the other");
  o.keep_accents = !strip_accents;
  o.do_lower_case = lowercase;

  // WhitespaceSplit (remove_space) and Metaspace, prefixing each text with U+2581
  const json& pre = r.part("pre_tokenizer");
  std::vector<json> pre_steps = {pre};
  if (r.type_of(pre, "pre_tokenizer", {"Sequence", "Metaspace"}) == "Sequence") {
    if (!pre.contains("pretokenizers") || !pre["pretokenizers"].is_array()) r.fail("pre_tokenizer.pretokenizers", "must be a list");
    pre_steps = pre["pretokenizers"].get<std::vector<json>>();
  }
  o.remove_space = false;
  bool metaspace = false;
  for (const json& step : pre_steps) {
    if (r.type_of(step, "pre_tokenizer", {"WhitespaceSplit", "Metaspace"}) == "WhitespaceSplit") {
      o.remove_space = true;
      continue;
    }
    metaspace = true;
    r.require(step, "pre_tokenizer", "replacement", kMetaspace);
    r.require(step, "pre_tokenizer", "prepend_scheme", "always");
  }
  if (!metaspace) r.fail("pre_tokenizer", "has no Metaspace step");
  const auto [cls, sep] = r.cls_sep(r.part("post_processor"));
  if (cls != "[CLS]" || sep != "[SEP]")
    r.fail("post_processor", fmt::format("places {} and {}; AlbertTokenizer's are [CLS] and [SEP]", cls, sep));

  std::set<int64_t> control;  // special added tokens: control symbols, as the converted spiece.model has them
  int64_t pad_id = -1;
  for (const auto& t : c.added_tokens()) {
    if (t.special) control.insert(t.id);
    if (t.content == "<pad>") pad_id = t.id;
  }
  return unigram_model_proto(pieces, control, unk_id, pad_id, charsmap, /*add_dummy_prefix=*/true);
}

json wordpiece_tokenizer_json(const BertTokenizer& tok, const TokenizerOptions& o) {
  json vocab = json::object();
  for (size_t id = 0; id < tok.vocab().size(); ++id) vocab[tok.vocab().token(int32_t(id))] = id;
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added_tokens_json(tok)},
          {"normalizer",
           {{"type", "BertNormalizer"},
            {"clean_text", o.clean_text},
            {"handle_chinese_chars", o.handle_chinese_chars},
            {"strip_accents", o.strip_accents ? json(*o.strip_accents) : json()},
            {"lowercase", o.lowercase}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor", cls_sep_template_json(tok, o.cls_token, o.sep_token)},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", o.unk_token},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", o.max_input_chars_per_word},
            {"vocab", vocab}}}};
}

json byte_level_bpe_tokenizer_json(const RobertaTokenizer& tok, const BpeModel& model, const RobertaTokenizerOptions& o) {
  json vocab = json::object(), merges = json::array();
  for (size_t id = 0; id < model.vocab().size(); ++id) vocab[model.vocab().token(int32_t(id))] = id;
  for (const auto& [left, right] : model.merges()) merges.push_back({left, right});
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", o.add_prefix_space}, {"trim_offsets", o.trim_offsets}, {"use_regex", true}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added_tokens_json(tok, o.mask_lstrip ? o.mask_token : "")},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"post_processor",
           {{"type", "RobertaProcessing"},
            {"sep", {o.sep_token, tok.token_to_id(o.sep_token)}},
            {"cls", {o.cls_token, tok.token_to_id(o.cls_token)}},
            {"trim_offsets", o.trim_offsets},
            {"add_prefix_space", o.add_prefix_space}}},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", ""},
            {"end_of_word_suffix", ""},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", merges}}}};
}

json unigram_tokenizer_json(const SentencePieceTokenizer& tok) {
  const sentencepiece::SentencePieceProcessor& sp = tok.processor();
  const SentencePieceOptions& o = tok.options();
  json vocab = json::array();
  int64_t unk_id = -1;
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    vocab.push_back({sp.IdToPiece(id), double(sp.GetScore(id))});
    if (unk_id < 0 && sp.IsUnknown(id)) unk_id = id;
  }
  // the normalizer's precompiled character map: ModelProto.normalizer_spec (3).precompiled_charsmap (2)
  const std::string serialized = sp.serialized_model_proto();
  const std::string where = "the model";
  std::string_view normalizer, charsmap;
  WireFields fields(serialized, where);
  if (fields.next_bytes(3, normalizer)) WireFields(normalizer, where).next_bytes(2, charsmap);
  json normalizers = {quote_replacement("``"), quote_replacement("''")};
  if (!o.keep_accents) normalizers.insert(normalizers.end(), {{{"type", "NFKD"}}, {{"type", "StripAccents"}}});
  if (o.do_lower_case) normalizers.push_back({{"type", "Lowercase"}});
  if (!charsmap.empty()) normalizers.push_back({{"type", "Precompiled"}, {"precompiled_charsmap", base64_encode(charsmap)}});
  const json pre = o.remove_space ? json{{"type", "Sequence"}, {"pretokenizers", {{{"type", "WhitespaceSplit"}}, metaspace_json()}}}
                                  : metaspace_json();
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added_tokens_json(tok)},
          {"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
          {"pre_tokenizer", pre},
          {"post_processor", cls_sep_template_json(tok, tok.special_tokens().cls, tok.special_tokens().sep)},
          {"decoder", metaspace_json()},
          {"model", {{"type", "Unigram"}, {"unk_id", unk_id}, {"vocab", vocab}, {"byte_fallback", false}}}};
}

void write_tokenizer_json(const std::string& dir, const json& doc) {
  write_text_atomically((std::filesystem::path(dir) / "tokenizer.json").string(), doc.dump(2));
}

}  // namespace xg::text
