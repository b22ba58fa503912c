#pragma once
// The parts of a Hugging Face tokenizer directory every family shares: tokenizer_config.json and
// special_tokens_map.json, read with errors that name the file and the field, and written as
// transformers' save_pretrained (4.x) writes them. Each family adds its own files and fields.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "text/tokenizer.hpp"
#include "text/vocab.hpp"

namespace xg::text {

// A tokenizer directory's settings: tokenizer_config.json, with special_tokens_map.json's special
// tokens taking precedence as in transformers. Either file may be absent.
class TokenizerConfig {
 public:
  // Throws naming the file when one is unreadable, not JSON, or not a JSON object.
  static TokenizerConfig read(const std::string& dir);

  const std::string& dir() const { return dir_; }
  // DIR/name; throws naming it, and `needed_by`, when the file does not exist.
  std::string required_file(const std::string& name, const std::string& needed_by) const;

  // tokenizer_config.json fields; absent or null: nullopt. The wrong JSON type throws naming the
  // file, the field and the value.
  std::optional<std::string> get_string(const char* field) const;
  std::optional<bool> get_bool(const char* field) const;
  // A non-negative integer; transformers' "no limit" (int(1e30)) and larger read as 0.
  std::optional<size_t> get_size(const char* field) const;
  // A special token by key ("unk_token"), written either as a string or as an AddedToken object
  // {"content": ...}. special_tokens_map.json wins only for files without added_tokens_decoder:
  // transformers reads it on that legacy path alone.
  std::optional<std::string> special_token(const char* key) const;
  std::vector<std::string> additional_special_tokens() const;

  // DIR/tokenizer.json (the tokenizers library's serialization, which transformers 5 saves alone),
  // or null when there is none.
  const nlohmann::json* tokenizer_json() const { return tokenizer_json_.is_null() ? nullptr : &tokenizer_json_; }
  const std::string& tokenizer_json_path() const { return tokenizer_json_path_; }

  // Tokens matched whole in raw text, with the ids the files give them, sorted by id:
  // tokenizer_config.json's added_tokens_decoder, or else the legacy added_tokens.json (special
  // when it is one of the special tokens), or else tokenizer.json's added_tokens.
  struct AddedToken {
    int32_t id;
    std::string content;
    bool special;
    bool lstrip;  // takes the whitespace before it along (RoBERTa's <mask>)
    bool rstrip = false, single_word = false;
    bool normalized = false;  // matched in the normalized (lowercased, accent-stripped) text
  };
  std::vector<AddedToken> added_tokens() const;
  // Checks the added tokens against `vocab` and appends those past its end (with their ids
  // following on); throws naming the file for a conflicting id, a gap, a non-special added token,
  // or a matching flag the tokenizer does not implement (rstrip, single_word, lstrip but on
  // `lstrip_token`, normalized where `normalizer_changes_text`), rather than tokenize otherwise
  // than transformers. Returns the special ones.
  std::vector<std::string> merge_added_tokens(Vocab& vocab, const std::string& lstrip_token = "",
                                              bool normalizer_changes_text = false) const;
  // The same checks for a tokenizer with a fixed set of special tokens (ALBERT's): every added
  // token and special-token field must be one of `supported`.
  void check_fixed_special_tokens(const std::vector<std::string>& supported) const;

 private:
  // The file the added tokens come from, for errors.
  const std::string& added_tokens_path() const;

  std::string dir_, config_path_, map_path_, added_path_, tokenizer_json_path_;
  nlohmann::json config_ = nlohmann::json::object(), map_ = nlohmann::json::object(), added_ = nlohmann::json::object();
  nlohmann::json tokenizer_json_;  // null: no tokenizer.json
  bool map_wins_ = true;
};

// Writes DIR/tokenizer_config.json (the family's `fields`, tokenizer_class, the special tokens,
// added_tokens_decoder, model_max_length when known) and DIR/special_tokens_map.json. Tokens in
// `lstrip` are written as AddedToken objects with "lstrip": true.
void write_tokenizer_config(const std::string& dir, const Tokenizer& tok, nlohmann::json fields,
                            const std::vector<std::string>& lstrip = {});

}  // namespace xg::text
