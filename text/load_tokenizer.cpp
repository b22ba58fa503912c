#include "text/load_tokenizer.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "text/hf_tokenizer_files.hpp"
#include "text/roberta_tokenizer.hpp"
#include "text/sentencepiece_tokenizer.hpp"
#include "util/json_input.hpp"
#include "util/strings.hpp"

namespace fs = std::filesystem;

namespace xg::text {

namespace {
using Loader = std::function<std::unique_ptr<Tokenizer>(const std::string& dir)>;

// tokenizer_class -> loader. transformers writes the slow class's name even for fast tokenizers,
// but older files may carry the Fast name.
const std::vector<std::pair<std::string, Loader>>& loaders() {
  static const Loader bert = [](const std::string& dir) { return std::make_unique<BertTokenizer>(BertTokenizer::from_pretrained(dir)); };
  static const Loader roberta = [](const std::string& dir) {
    return std::make_unique<RobertaTokenizer>(RobertaTokenizer::from_pretrained(dir));
  };
  static const Loader albert = [](const std::string& dir) -> std::unique_ptr<Tokenizer> { return SentencePieceTokenizer::from_pretrained(dir); };
  static const std::vector<std::pair<std::string, Loader>> all = {
      {"BertTokenizer", bert},       {"BertTokenizerFast", bert},       {"RobertaTokenizer", roberta},
      {"RobertaTokenizerFast", roberta}, {"AlbertTokenizer", albert}, {"AlbertTokenizerFast", albert},
      {"ElectraTokenizer", bert},       {"ElectraTokenizerFast", bert}};  // ELECTRA's is BERT's WordPiece under its own name
  return all;
}

// The class for a directory whose tokenizer_config.json names none (older Hugging Face
// checkpoints, and this project's before tokenizer files): by config.json's model_type.
std::string class_from_model_type(const std::string& dir, const ClassOfModelType& class_of_model_type) {
  const std::string path = (fs::path(dir) / "config.json").string();
  std::ifstream in(path, std::ios::binary);
  // Bare BPE files (vocab.json + merges.txt) are RoBERTa's.
  if (!in && fs::exists(fs::path(dir) / "vocab.json") && fs::exists(fs::path(dir) / "merges.txt")) return "RobertaTokenizer";
  if (!in)
    throw std::runtime_error(fmt::format("[load_tokenizer] {}: no tokenizer_config.json with a tokenizer_class, and no "
                                         "config.json to take the model_type from", dir));
  nlohmann::json j;
  try {
    j = parse_json_bounded(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("[load_tokenizer] {}: not valid JSON: {}", path, e.what()));
  }
  const std::string type = j.is_object() && j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  if (!class_of_model_type)
    throw std::runtime_error(fmt::format("[load_tokenizer] {}: no tokenizer_class in tokenizer_config.json, and no model "
                                         "registry to map model_type '{}' to one (models::load_tokenizer has it)", path, type));
  if (const std::string cls = class_of_model_type(type); !cls.empty()) return cls;
  throw std::runtime_error(fmt::format("[load_tokenizer] {}: no tokenizer_class in tokenizer_config.json, and model_type '{}' "
                                       "names no tokenizer this project has", path, type));
}
}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, const ClassOfModelType& class_of_model_type) {
  const TokenizerConfig c = TokenizerConfig::read(dir);
  const std::string cls = c.get_string("tokenizer_class").value_or("");
  // A bare directory holding only spiece.model is ALBERT's (as a bare vocab.txt is BERT's).
  const bool bare_spiece = cls.empty() && fs::is_regular_file(fs::path(dir) / "spiece.model") &&
                           !fs::exists(fs::path(dir) / "config.json");
  const std::string chosen = bare_spiece ? "AlbertTokenizer" : cls.empty() ? class_from_model_type(dir, class_of_model_type) : cls;
  std::string known;
  for (const auto& [name, load] : loaders()) {
    if (name == chosen) return load(dir);
    known += (known.empty() ? "" : ", ") + name;
  }
  throw std::runtime_error(fmt::format("[load_tokenizer] {}: tokenizer_class '{}' is not supported (supported: {})",
                                       (fs::path(dir) / "tokenizer_config.json").string(), chosen, known));
}

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path, const TokenizerOptions& wordpiece,
                                          const ClassOfModelType& class_of_model_type) {
  if (fs::is_directory(path)) return load_tokenizer(path, class_of_model_type);
  const std::string name = fs::path(path).filename().string();
  if (ends_with(name, "vocab.json")) {
    // NAMEvocab.json goes with NAMEmerges.txt (vocab.json with merges.txt, gpt2-vocab.json with gpt2-merges.txt)
    const std::string merges = (fs::path(path).parent_path() / (name.substr(0, name.size() - 10) + "merges.txt")).string();
    if (!fs::exists(merges)) throw std::runtime_error(fmt::format("[load_tokenizer] {}: no {} beside it", path, merges));
    return std::make_unique<RobertaTokenizer>(RobertaTokenizer::from_files(path, merges));
  }
  if (fs::path(path).extension() == ".model") {  // a SentencePiece model (ALBERT's spiece.model)
    SentencePieceOptions sp;
    sp.do_lower_case = wordpiece.lowercase;
    return std::make_unique<SentencePieceTokenizer>(path, sp);
  }
  return std::make_unique<BertTokenizer>(BertTokenizer::from_file(path, wordpiece));
}

}  // namespace xg::text
