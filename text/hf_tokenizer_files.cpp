#include "text/hf_tokenizer_files.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "util/atomic_file.hpp"
#include "util/json_input.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace xg::text {

namespace {
json read_json_object(const std::string& path) {
  if (!fs::exists(path)) return json::object();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("[load_tokenizer] {}: cannot open", path));
  json j;
  try {
    j = parse_json_bounded(in);
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("[load_tokenizer] {}: not valid JSON: {}", path, e.what()));
  }
  if (!j.is_object()) throw std::runtime_error(fmt::format("[load_tokenizer] {}: expected a JSON object, got {}", path, j.type_name()));
  return j;
}

[[noreturn]] void bad_field(const std::string& path, const char* field, const char* wanted, const json& value) {
  throw std::runtime_error(fmt::format("[load_tokenizer] {}: field '{}' must be {}, got {}", path, field, wanted, json_summary(value)));
}

// A special token's text: "[CLS]" or {"content": "[CLS]", "lstrip": false, ...}.
std::string token_content(const json& v, const std::string& path, const char* field) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  bad_field(path, field, "a string or an object with a string \"content\"", v);
}

void write_json(const std::string& path, const json& j) {
  write_text_atomically(path, j.dump(2) + "\n");  // transformers writes json.dumps(indent=2, sort_keys=True) + "\n"
}
}  // namespace

TokenizerConfig TokenizerConfig::read(const std::string& dir) {
  if (!fs::is_directory(dir)) throw std::runtime_error(fmt::format("[load_tokenizer] {}: not a directory", dir));
  TokenizerConfig c;
  c.dir_ = dir;
  c.config_path_ = (fs::path(dir) / "tokenizer_config.json").string();
  c.map_path_ = (fs::path(dir) / "special_tokens_map.json").string();
  c.added_path_ = (fs::path(dir) / "added_tokens.json").string();
  c.config_ = read_json_object(c.config_path_);
  c.map_ = read_json_object(c.map_path_);
  c.added_ = read_json_object(c.added_path_);
  c.tokenizer_json_path_ = (fs::path(dir) / "tokenizer.json").string();
  if (fs::exists(c.tokenizer_json_path_)) c.tokenizer_json_ = read_json_object(c.tokenizer_json_path_);
  c.map_wins_ = !c.config_.contains("added_tokens_decoder");
  return c;
}

std::string TokenizerConfig::required_file(const std::string& name, const std::string& needed_by) const {
  const std::string path = (fs::path(dir_) / name).string();
  if (!fs::exists(path)) throw std::runtime_error(fmt::format("[load_tokenizer] {}: missing ({} needs it)", path, needed_by));
  return path;
}

std::optional<std::string> TokenizerConfig::get_string(const char* field) const {
  if (!config_.contains(field) || config_[field].is_null()) return std::nullopt;
  if (!config_[field].is_string()) bad_field(config_path_, field, "a string", config_[field]);
  return config_[field].get<std::string>();
}

std::optional<bool> TokenizerConfig::get_bool(const char* field) const {
  if (!config_.contains(field) || config_[field].is_null()) return std::nullopt;
  if (!config_[field].is_boolean()) bad_field(config_path_, field, "true, false or null", config_[field]);
  return config_[field].get<bool>();
}

std::optional<size_t> TokenizerConfig::get_size(const char* field) const {
  if (!config_.contains(field) || config_[field].is_null()) return std::nullopt;
  const json& v = config_[field];
  if (v.is_number_unsigned()) return v.get<size_t>();
  // int(1e30) does not fit 64 bits: the parser reads it as a float
  if (v.is_number_float() && v.get<double>() >= 1e18) return size_t(0);
  bad_field(config_path_, field, "a non-negative integer", v);
}

std::optional<std::string> TokenizerConfig::special_token(const char* key) const {
  if (map_wins_ && map_.contains(key) && !map_[key].is_null()) return token_content(map_[key], map_path_, key);
  if (config_.contains(key) && !config_[key].is_null()) return token_content(config_[key], config_path_, key);
  return std::nullopt;
}

std::vector<std::string> TokenizerConfig::additional_special_tokens() const {
  const char* key = "additional_special_tokens";
  const bool in_map = map_wins_ && map_.contains(key) && !map_[key].is_null();
  const json& v = in_map ? map_[key] : config_.contains(key) ? config_[key] : json();
  const std::string& path = in_map ? map_path_ : config_path_;
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (!v.is_array()) bad_field(path, key, "a list", v);
  for (const json& t : v) out.push_back(token_content(t, path, key));
  return out;
}

std::vector<TokenizerConfig::AddedToken> TokenizerConfig::added_tokens() const {
  std::vector<AddedToken> out;
  const char* field = "added_tokens_decoder";
  if (config_.contains(field)) {
    const json& decoder = config_[field];
    if (!decoder.is_object()) bad_field(config_path_, field, "an object of id: token", decoder);
    for (const auto& item : decoder.items()) {
      const std::string& key = item.key();
      const json& v = item.value();  // named, not a structured binding: clang 14's lambdas cannot capture those
      size_t used = 0;
      int64_t id = -1;
      try {
        id = std::stoll(key, &used);
      } catch (const std::exception&) {
      }
      if (id < 0 || used != key.size() || id > INT32_MAX) bad_field(config_path_, field, "keyed by token ids", json(key));
      auto flag = [&](const char* name) { return v.is_object() && v.contains(name) && v[name].is_boolean() && v[name].get<bool>(); };
      out.push_back({int32_t(id), token_content(v, config_path_, field), flag("special"), flag("lstrip"), flag("rstrip"),
                     flag("single_word"), flag("normalized")});
    }
  } else if (added_.empty() && tokenizer_json_.is_object() && tokenizer_json_.contains("added_tokens")) {
    const json& list = tokenizer_json_["added_tokens"];
    if (!list.is_array()) bad_field(tokenizer_json_path_, "added_tokens", "a list", list);
    for (const json& v : list) {
      if (!v.is_object() || !v.contains("id") || !v["id"].is_number_unsigned() || v["id"].get<uint64_t>() > INT32_MAX)
        bad_field(tokenizer_json_path_, "added_tokens", "a list of objects with an \"id\" and a \"content\"", v);
      auto flag = [&](const char* name) { return v.contains(name) && v[name].is_boolean() && v[name].get<bool>(); };
      out.push_back({int32_t(v["id"].get<uint64_t>()), token_content(v, tokenizer_json_path_, "added_tokens"), flag("special"),
                     flag("lstrip"), flag("rstrip"), flag("single_word"), flag("normalized")});
    }
  } else {
    std::vector<std::string> specials = additional_special_tokens();
    for (const char* key : {"unk_token", "cls_token", "sep_token", "pad_token", "mask_token", "bos_token", "eos_token"})
      if (auto t = special_token(key)) specials.push_back(*t);
    for (const auto& [token, v] : added_.items()) {
      if (!v.is_number_unsigned() || v.get<uint64_t>() > INT32_MAX) bad_field(added_path_, token.c_str(), "a token id", v);
      out.push_back({int32_t(v.get<uint64_t>()), token, std::find(specials.begin(), specials.end(), token) != specials.end(), false});
    }
  }
  std::sort(out.begin(), out.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  return out;
}

namespace {
void refuse_unsupported_flags(const TokenizerConfig::AddedToken& t, const std::string& path, const std::string& lstrip_token,
                              bool normalizer_changes_text) {
  const char* flag = t.rstrip ? "rstrip" : t.single_word ? "single_word" : (t.lstrip && t.content != lstrip_token) ? "lstrip"
                     : (t.normalized && normalizer_changes_text) ? "normalized" : nullptr;
  if (flag && std::string(flag) == "lstrip" && !lstrip_token.empty())  // e.g. RoBERTa's <mask>, with mask_token edited
    throw std::runtime_error(fmt::format("[load_tokenizer] {}: added token '{}' (id {}) sets lstrip, which this tokenizer "
                                         "implements for the mask token only, and the mask token is '{}' (mask_token): if "
                                         "'{}' is the mask token, set mask_token to it; else clear its lstrip",
                                         path, t.content, t.id, lstrip_token, t.content));
  if (flag)
    throw std::runtime_error(fmt::format("[load_tokenizer] {}: added token '{}' (id {}) sets {}, which this tokenizer does not "
                                         "implement (it would match the token otherwise than transformers)", path, t.content, t.id, flag));
}
}  // namespace

const std::string& TokenizerConfig::added_tokens_path() const {
  if (config_.contains("added_tokens_decoder")) return config_path_;
  return !added_.empty() || tokenizer_json_.is_null() ? added_path_ : tokenizer_json_path_;
}

std::vector<std::string> TokenizerConfig::merge_added_tokens(Vocab& vocab, const std::string& lstrip_token,
                                                             bool normalizer_changes_text) const {
  const std::string& path = added_tokens_path();
  std::vector<std::string> specials;
  for (const AddedToken& t : added_tokens()) {
    if (!t.special)
      throw std::runtime_error(fmt::format("[load_tokenizer] {}: added token '{}' (id {}) is not special; only special "
                                           "added tokens are supported", path, t.content, t.id));
    refuse_unsupported_flags(t, path, lstrip_token, normalizer_changes_text);
    if (size_t(t.id) > vocab.size())
      throw std::runtime_error(fmt::format("[load_tokenizer] {}: added token '{}' has id {}, but the vocabulary ends at {}",
                                           path, t.content, t.id, vocab.size()));
    const int32_t at = vocab.id(t.content);
    if (at < 0 && size_t(t.id) == vocab.size()) vocab.add(t.content);
    else if (at != t.id)
      throw std::runtime_error(fmt::format("[load_tokenizer] {}: added token '{}' has id {}, but the vocabulary {}", path,
                                           t.content, t.id, at < 0 ? fmt::format("has '{}' there", vocab.token(t.id)) : fmt::format("has it at {}", at)));
    specials.push_back(t.content);
  }
  return specials;
}

void TokenizerConfig::check_fixed_special_tokens(const std::vector<std::string>& supported) const {
  const auto known = [&](const std::string& t) { return std::find(supported.begin(), supported.end(), t) != supported.end(); };
  const std::string list = fmt::format("{}", fmt::join(supported, " "));
  const std::string& path = added_tokens_path();
  for (const AddedToken& t : added_tokens()) {
    if (!known(t.content))
      throw std::runtime_error(fmt::format("[load_tokenizer] {}: added token '{}' (id {}) is not supported: this tokenizer "
                                           "has only its model's pieces and {}", path, t.content, t.id, list));
    refuse_unsupported_flags(t, path, t.content, false);  // its specials keep their own stripping
  }
  for (const char* key : {"unk_token", "cls_token", "sep_token", "pad_token", "mask_token"})
    if (auto t = special_token(key); t && !known(*t))
      throw std::runtime_error(fmt::format("[load_tokenizer] {}: {} '{}' is not supported: this tokenizer's special tokens are {}",
                                           config_path_, key, *t, list));
  for (const std::string& t : additional_special_tokens())
    if (!known(t))
      throw std::runtime_error(fmt::format("[load_tokenizer] {}: additional special token '{}' is not supported: this tokenizer's "
                                           "special tokens are {}", config_path_, t, list));
}

void write_tokenizer_config(const std::string& dir, const Tokenizer& tok, json fields, const std::vector<std::string>& lstrip) {
  auto strips = [&](const std::string& t) { return std::find(lstrip.begin(), lstrip.end(), t) != lstrip.end(); };
  fs::create_directories(dir);
  const SpecialTokens& st = tok.special_tokens();
  json map = json::object(), names = json::object();  // special_tokens_map.json's; tokenizer_config.json's
  const std::pair<const char*, const std::string*> roles[] = {{"unk_token", &st.unk}, {"cls_token", &st.cls},
                                                              {"sep_token", &st.sep}, {"pad_token", &st.pad},
                                                              {"mask_token", &st.mask}, {"bos_token", &st.bos},
                                                              {"eos_token", &st.eos}};
  // A token that strips the space before it is an object in special_tokens_map.json and a plain
  // name in tokenizer_config.json (its lstrip is in added_tokens_decoder), as transformers writes
  // them: transformers' slow tokenizers refuse the object form in tokenizer_config.json.
  for (const auto& [key, token] : roles) {
    if (token->empty()) continue;
    names[key] = *token;
    map[key] = strips(*token) ? json{{"content", *token}, {"lstrip", true}, {"normalized", false}, {"rstrip", false}, {"single_word", false}}
                              : json(*token);
  }
  if (!st.additional.empty()) map["additional_special_tokens"] = names["additional_special_tokens"] = st.additional;
  // added_tokens_decoder: the tokens matched whole in raw text, by id (transformers >= 4.34)
  json added = json::object();
  for (size_t id = 0; id < tok.vocab_size(); ++id)
    if (tok.is_special(int32_t(id)))
      added[std::to_string(id)] = {{"content", tok.id_to_token(int32_t(id))}, {"lstrip", strips(tok.id_to_token(int32_t(id)))}, {"normalized", false},
                                   {"rstrip", false}, {"single_word", false}, {"special", true}};
  fields.update(names);
  fields["added_tokens_decoder"] = added;
  fields["tokenizer_class"] = tok.tokenizer_class();
  if (tok.model_max_length() > 0) fields["model_max_length"] = tok.model_max_length();
  write_json((fs::path(dir) / "tokenizer_config.json").string(), fields);
  write_json((fs::path(dir) / "special_tokens_map.json").string(), map);
}

}  // namespace xg::text
