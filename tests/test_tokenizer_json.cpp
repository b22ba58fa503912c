// tokenizer.json alone, as transformers 5 saves a tokenizer (tests/data/tokenizer_json from
// tools/gen_tokenizer_json_goldens.py): BERT-base's WordPiece gives the ids and offsets of
// tokenizer_goldens.json, RoBERTa's byte-level BPE the vocabulary and merges of its vocab.json
// and merges.txt, ALBERT's Unigram the pieces of its spiece.model and the ids of spiece/goldens.json; what save_pretrained writes is the tokenizers library's own tokenizer.json;
// settings these tokenizers do not implement are refused naming the file and the field.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/golden.hpp"
#include "tests/tokenizer_goldens.hpp"
#include "tests/temp_path.hpp"
#include "text/bert_tokenizer.hpp"
#include "text/load_tokenizer.hpp"
#include "text/roberta_tokenizer.hpp"
#include "text/sentencepiece_tokenizer.hpp"
#include "util/base64.hpp"

#include <sentencepiece_processor.h>

using namespace xg::text;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(XGRAD_TEST_DATA_DIR) + "/tokenizer_json/";

nlohmann::json read_json(const fs::path& path) { return nlohmann::json::parse(std::ifstream(path)); }

// A copy of a tokenizer.json directory with `change` applied to its tokenizer.json.
std::string edited(const std::string& name, const std::function<void(nlohmann::json&)>& change) {
  const fs::path dir = temp_path("xgrad_tokenizer_json_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kDir + name + "/tokenizer_config.json", dir / "tokenizer_config.json");
  nlohmann::json j = read_json(kDir + name + "/tokenizer.json");
  change(j);
  std::ofstream(dir / "tokenizer.json") << j.dump();
  return dir.string();
}

}  // namespace

TEST_CASE("tokenizer.json alone: BERT-base's WordPiece gives Hugging Face's ids and offsets", "[tokenizer][parity][files]") {
  REQUIRE_FALSE(fs::exists(kDir + "bert-base-uncased/vocab.txt"));
  const auto tok = load_tokenizer(kDir + "bert-base-uncased");
  REQUIRE(tok->tokenizer_class() == "BertTokenizer");
  CHECK(tok->vocab_size() == 30522);
  const nlohmann::json goldens = xg::test::load_golden("tokenizer_goldens.json");
  CHECK(xg::test::check_single_goldens(*tok, goldens.at("uncased").at("single"), "uncased") >= 300);
  // the same tokenizer as the one vocab.txt gives
  const BertTokenizer from_vocab = BertTokenizer::from_file(std::string(XGRAD_TEST_DATA_DIR) + "/../../data/bert-base-uncased-vocab.txt");
  for (int32_t id : {0, 100, 101, 102, 103, 1996, 30521}) CHECK(tok->id_to_token(id) == from_vocab.id_to_token(id));
  CHECK(tok->special_tokens().cls == "[CLS]");
  CHECK(tok->is_special(103));
}

TEST_CASE("tokenizer.json alone: RoBERTa's byte-level BPE is its vocab.json and merges.txt", "[bpe][files]") {
  const auto tok = load_tokenizer(kDir + "roberta-small");
  REQUIRE(tok->tokenizer_class() == "RobertaTokenizer");
  const std::string files = std::string(XGRAD_TEST_DATA_DIR) + "/bpe_trainer/roberta/";
  const BpeModel expected = BpeModel::from_files(files + "vocab.json", files + "merges.txt");
  const auto& bpe = dynamic_cast<const RobertaTokenizer&>(*tok).model();
  REQUIRE(bpe.vocab().size() == expected.vocab().size());
  for (size_t id = 0; id < expected.vocab().size(); ++id) CHECK(bpe.vocab().token(int32_t(id)) == expected.vocab().token(int32_t(id)));
  CHECK(bpe.merges() == expected.merges());
  // transformers 5's ids for this text (printed by the generator)
  CHECK(tok->encode("Hello, world!").ids == std::vector<int32_t>{0, 485, 285, 83, 16, 645, 5, 2});
  // merges written as "a b" strings (tokenizers before 0.20) read the same
  const auto older = load_tokenizer(edited("roberta-small", [](nlohmann::json& j) {
    for (auto& m : j["model"]["merges"]) m = m[0].get<std::string>() + " " + m[1].get<std::string>();
  }));
  CHECK(dynamic_cast<const RobertaTokenizer&>(*older).model().merges() == expected.merges());
  // mask_token edited away from <mask>: <mask>'s lstrip (which the stock file sets) is not the
  // cause, the edit is, and the message says so
  const std::string renamed = edited("roberta-small", [](nlohmann::json& j) {
    for (auto& t : j["added_tokens"])
      if (t["content"] == "<mask>") t["lstrip"] = true;  // as roberta-base's files have it
  });
  CHECK(load_tokenizer(renamed)->special_tokens().mask == "<mask>");  // loads as it stands
  nlohmann::json config = read_json(fs::path(renamed) / "tokenizer_config.json");
  config["mask_token"] = "[MASK]";
  std::ofstream(fs::path(renamed) / "tokenizer_config.json") << config.dump();
  CHECK_THROWS_WITH(load_tokenizer(renamed), Contains("'<mask>'") && Contains("the mask token is '[MASK]' (mask_token)") &&
                                                 Contains("set mask_token to it"));
}

TEST_CASE("tokenizer.json alone: ALBERT's Unigram is its spiece.model, piece for piece, and gives its ids", "[spiece][files]") {
  REQUIRE_FALSE(fs::exists(kDir + "albert-small/spiece.model"));
  const auto tok = load_tokenizer(kDir + "albert-small");
  REQUIRE(tok->tokenizer_class() == "AlbertTokenizer");
  const SentencePieceTokenizer original(std::string(XGRAD_TEST_DATA_DIR) + "/spiece/spiece.model");
  const auto& a = dynamic_cast<const SentencePieceTokenizer&>(*tok).processor();
  const auto& b = original.processor();
  REQUIRE(a.GetPieceSize() == b.GetPieceSize());
  for (int id = 0; id < b.GetPieceSize(); ++id) {
    INFO("piece " << id);
    CHECK(a.IdToPiece(id) == b.IdToPiece(id));
    CHECK(a.GetScore(id) == b.GetScore(id));
    CHECK(a.IsControl(id) == b.IsControl(id));
    CHECK(a.IsUnknown(id) == b.IsUnknown(id));
  }
  const nlohmann::json goldens = xg::test::load_golden("spiece/goldens.json");
  for (const auto& c : goldens.at("singles")) {
    INFO("text: " << c.at("text").dump());
    CHECK(tok->encode(c.at("text").get<std::string>()).ids == c.at("ids").get<std::vector<int32_t>>());
  }
  for (const auto& p : goldens.at("pairs")) {
    const Encoding e = tok->encode_pair(p.at("a").get<std::string>(), p.at("b").get<std::string>());
    CHECK(e.ids == p.at("ids").get<std::vector<int32_t>>());
    CHECK(e.type_ids == p.at("type_ids").get<std::vector<int32_t>>());
  }
}

TEST_CASE("save_pretrained writes the tokenizers library's tokenizer.json beside the vocabulary files", "[tokenizer][bpe][files]") {
  for (const std::string name : {"bert-base-uncased", "roberta-small", "albert-small"}) {
    INFO(name);
    const auto tok = load_tokenizer(kDir + name);
    const fs::path out = temp_path("xgrad_tokenizer_json_saved");
    fs::remove_all(out);
    tok->save_pretrained(out.string());
    CHECK(read_json(out / "tokenizer.json") == read_json(kDir + name + "/tokenizer.json"));
    // and it loads alone, to the same ids
    for (const char* file : {"vocab.txt", "vocab.json", "merges.txt", "spiece.model"}) fs::remove(out / file);
    fs::remove(out / "tokenizer_config.json");
    fs::remove(out / "special_tokens_map.json");
    std::ofstream(out / "tokenizer_config.json") << nlohmann::json{{"tokenizer_class", tok->tokenizer_class()}}.dump();
    const auto again = load_tokenizer(out.string());
    for (const char* text : {"Hello, world!", "Héllo wörld, naïve café", "東京 is far", "  spaces   "})
      CHECK(again->encode(text).ids == tok->encode(text).ids);
    fs::remove_all(out);
  }
}

TEST_CASE("tokenizer.json: settings these tokenizers do not implement are refused naming the field", "[tokenizer][files][errors]") {
  using J = nlohmann::json;
  const std::vector<std::tuple<std::string, std::function<void(J&)>, std::string>> cases = {
      {"bert-base-uncased", [](J& j) { j["model"]["type"] = "Unigram"; }, "model.type is 'Unigram': BertTokenizer supports WordPiece"},
      {"bert-base-uncased", [](J& j) { j["model"]["continuing_subword_prefix"] = "@@"; }, "model.continuing_subword_prefix is \"@@\""},
      {"bert-base-uncased", [](J& j) { j["normalizer"] = {{"type", "NFC"}}; }, "normalizer.type is 'NFC'"},
      {"bert-base-uncased", [](J& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }, "pre_tokenizer.type is 'Whitespace'"},
      {"bert-base-uncased", [](J& j) { j.erase("model"); }, "model is missing"},
      {"bert-base-uncased", [](J& j) { j["model"]["vocab"]["[PAD]"] = 1; }, "gives the id 1 to"},
      {"bert-base-uncased", [](J& j) { j["model"]["vocab"]["[PAD]"] = 99999; }, "gives '[PAD]' the id 99999"},
      {"bert-base-uncased", [](J& j) { j["post_processor"]["single"] = J::array(); }, "post_processor.single is"},
      {"roberta-small", [](J& j) { j["model"]["dropout"] = 0.1; }, "model.dropout is set"},
      {"roberta-small", [](J& j) { j["model"]["merges"][3] = 7; }, "model.merges[3] is 7"},
      {"roberta-small", [](J& j) { j["model"]["merges"][0] = J::array({"Ġ", "not-a-token"}); }, "model.merges"},
      {"roberta-small", [](J& j) { j["pre_tokenizer"]["use_regex"] = false; }, "pre_tokenizer.use_regex is false"},
      {"roberta-small", [](J& j) { j["normalizer"] = {{"type", "Lowercase"}}; }, "normalizer is set"},
      {"roberta-small", [](J& j) { j["added_tokens"][0]["rstrip"] = true; }, "sets rstrip"},
      {"albert-small", [](J& j) { j["model"]["byte_fallback"] = true; }, "model.byte_fallback is true"},
      {"albert-small", [](J& j) { j["model"]["unk_id"] = 5000; }, "model.unk_id must be the id of one of the 2000 pieces"},
      {"albert-small", [](J& j) { j["model"]["vocab"][7] = "piece"; }, "model.vocab[7] is"},
      {"albert-small", [](J& j) { j["normalizer"]["normalizers"][2] = {{"type", "NFC"}}; }, "normalizer.type is 'NFC'"},
      {"albert-small", [](J& j) { j["normalizer"]["normalizers"].erase(0); }, "lacks ALBERT's replacements"},
      {"albert-small", [](J& j) { j["normalizer"]["normalizers"].back()["precompiled_charsmap"] = "not*base64xx"; }, "not base64 at character 3"},
      {"albert-small", [](J& j) { j["pre_tokenizer"]["pretokenizers"][1]["prepend_scheme"] = "never"; },
       "pre_tokenizer.prepend_scheme is \"never\""},
  };
  for (const auto& [name, change, message] : cases) {
    INFO(message);
    const std::string dir = edited(name, change);
    CHECK_THROWS_WITH(load_tokenizer(dir), Contains(dir + "/tokenizer.json") && Contains(message));
  }
  const fs::path dir = temp_path("xgrad_tokenizer_json_broken");
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kDir + "roberta-small/tokenizer_config.json", dir / "tokenizer_config.json");
  std::ofstream(dir / "tokenizer.json") << "{\"model\": {\"type\": \"BPE\", ";
  CHECK_THROWS_WITH(load_tokenizer(dir.string()), Contains("tokenizer.json") && Contains("not valid JSON"));
}

TEST_CASE("base64: every byte value round-trips at every padding; bad text is refused with its offset", "[files]") {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(char(i));
  for (size_t n : {0, 1, 2, 3, 4, 5, 255, 256}) {
    const std::string part = bytes.substr(0, n), text = xg::base64_encode(part);
    CHECK(text.size() % 4 == 0);
    CHECK(xg::base64_decode(text, "test") == part);
  }
  CHECK(xg::base64_encode("Man") == "TWFu");
  CHECK(xg::base64_encode("Ma") == "TWE=");
  CHECK(xg::base64_encode("M") == "TQ==");
  CHECK_THROWS_WITH(xg::base64_decode("TWF", "x"), Contains("x: base64 of 3 characters"));
  CHECK_THROWS_WITH(xg::base64_decode("TW=u", "x"), Contains("not base64 at character 2"));
  CHECK_THROWS_WITH(xg::base64_decode("TQ==TWFu", "x"), Contains("not base64 at character 2"));
  CHECK_THROWS_WITH(xg::base64_decode("TWF\n", "x"), Contains("not base64 at character 3"));
}
