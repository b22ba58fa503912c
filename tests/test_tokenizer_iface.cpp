// The tokenizer interface: BertTokenizer used only through `const Tokenizer&`, word starts for
// whole-word masking (WordPiece's "##" and a SentencePiece-style "▁" scheme), Hugging Face
// tokenizer directories written and read back, and their errors.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/core/family_tokenizer.hpp"
#include "tests/golden.hpp"
#include "text/hf_tokenizer_files.hpp"
#include "text/load_tokenizer.hpp"
#include "text/pretraining_data.hpp"
#include "tests/temp_path.hpp"

using namespace xg::text;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
const std::string kVocab = std::string(XGRAD_TEST_DATA_DIR) + "/../../data/bert-base-uncased-vocab.txt";

const Tokenizer& bert() {
  static const BertTokenizer t = BertTokenizer::from_file(kVocab);
  return t;
}

std::string fresh_dir(const std::string& name) {
  const fs::path d = fs::path(temp_path("xgrad_tokiface_" + name));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::vector<std::string> test_lines() {
  std::vector<std::string> lines;
  const nlohmann::json goldens = xg::test::load_golden("tokenizer_goldens.json");
  for (const auto& c : goldens.at("cased").at("single")) lines.push_back(c.at("text"));
  std::ifstream in(std::string(XGRAD_TEST_DATA_DIR) + "/tokenizer_corpus.txt");
  for (std::string l; lines.size() < 1000 && std::getline(in, l);) lines.push_back(l);
  return lines;
}

// A SentencePiece-like tokenizer: "▁" marks the first piece of each space-separated word, the
// other pieces carry no mark; greedy longest match. Enough to show whole-word masking does not
// depend on WordPiece's "##".
class PrefixTokenizer : public Tokenizer {
 public:
  explicit PrefixTokenizer(std::vector<std::string> pieces) : vocab_(pieces) {
    specials_.unk = "<unk>";
    specials_.cls = "<cls>";
    specials_.sep = "<sep>";
    specials_.pad = "<pad>";
    specials_.mask = "<mask>";
    using T = SpecialTokenTemplate;
    template_.single = {{T::kFirstText, 0}, {vocab_.id("<sep>"), 0}, {vocab_.id("<cls>"), 2}};  // XLNet's order
    template_.pair = {{T::kFirstText, 0}, {vocab_.id("<sep>"), 0}, {T::kSecondText, 1}, {vocab_.id("<sep>"), 1}, {vocab_.id("<cls>"), 2}};
  }
  std::string tokenizer_class() const override { return "PrefixTokenizer"; }
  std::vector<Token> tokenize(std::string_view text, const std::string& = "input") const override {
    std::vector<Token> out;
    for (size_t i = 0; i < text.size();) {
      if (text[i] == ' ') {
        ++i;
        continue;
      }
      const size_t end = std::min(text.find(' ', i), text.size()), first = out.size();
      for (size_t start = i; start < end;) {
        size_t stop = end;
        int32_t id = -1;
        for (; stop > start; --stop)
          if ((id = vocab_.id((start == i ? "\u2581" : "") + std::string(text.substr(start, stop - start)))) >= 0) break;
        if (id < 0) {  // no piece fits: the whole word is unknown
          out.resize(first);
          out.push_back({vocab_.id("<unk>"), i, end});
          break;
        }
        out.push_back({id, start, stop});
        start = stop;
      }
      i = end;
    }
    return out;
  }
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const override {
    std::string s;
    for (int32_t id : ids)
      if (!(skip_special_tokens && is_special(id))) s += id_to_token(id);
    for (size_t p; (p = s.find("\u2581")) != std::string::npos;) s.replace(p, 3, " ");
    return s.empty() || s[0] != ' ' ? s : s.substr(1);
  }
  size_t vocab_size() const override { return vocab_.size(); }
  const std::string& id_to_token(int32_t id) const override { return vocab_.token(id); }
  int32_t token_to_id(std::string_view t) const override { return vocab_.id(t); }
  const SpecialTokens& special_tokens() const override { return specials_; }
  bool is_special(int32_t id) const override { return id_to_token(id)[0] == '<'; }
  bool starts_word(int32_t id) const override { return id_to_token(id).rfind("\u2581", 0) == 0; }
  size_t model_max_length() const override { return 0; }
  void save_pretrained(const std::string& dir) const override {
    vocab_.save((fs::path(dir) / "vocab.txt").string());
    write_tokenizer_config(dir, *this, nlohmann::json::object());
  }

 protected:
  const SpecialTokenTemplate& special_token_template() const override { return template_; }

 private:
  Vocab vocab_;
  SpecialTokens specials_;
  SpecialTokenTemplate template_;
};

const PrefixTokenizer& prefix_tokenizer() {
  static const PrefixTokenizer t({"<pad>", "<unk>", "<cls>", "<sep>", "<mask>", "\u2581the", "\u2581un", "aff", "able",
                                  "\u2581cat", "\u2581sat", "\u2581re", "vers", "ible", "\u2581on", "\u2581mat", "s"});
  return t;
}
}  // namespace

TEST_CASE("BertTokenizer through the Tokenizer interface", "[tokenizer][iface]") {
  const Tokenizer& tok = bert();
  CHECK(tok.tokenizer_class() == "BertTokenizer");
  CHECK(tok.vocab_size() == 30522);
  CHECK(tok.id_to_token(7592) == "hello");
  CHECK(tok.token_to_id("hello") == 7592);
  CHECK(tok.token_to_id("no-such-token") == -1);
  CHECK_THROWS_WITH(tok.id_to_token(30522), Contains("id 30522"));
  CHECK(tok.unk_id() == 100);
  CHECK(tok.cls_id() == 101);
  CHECK(tok.sep_id() == 102);
  CHECK(tok.pad_id() == 0);
  CHECK(tok.mask_id() == 103);
  CHECK(tok.special_tokens().mask == "[MASK]");
  CHECK(tok.special_tokens().bos.empty());
  CHECK(tok.is_special(101));
  CHECK_FALSE(tok.is_special(7592));
  const Encoding e = tok.encode_pair("Hello world", "unaffable!");
  CHECK(e.ids == std::vector<int32_t>{101, 7592, 2088, 102, 14477, 20961, 3468, 999, 102});
  CHECK(e.type_ids == std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1, 1});
  CHECK(e.offsets[1] == std::pair<size_t, size_t>{0, 5});
  CHECK(e.offsets[5] == std::pair<size_t, size_t>{3, 6});  // "##ffa" of "unaffable!"
  // an empty second text, as BertTokenizerFast encodes it in a batch of pairs
  const Encoding empty_b = tok.encode_pair("good day", "");
  CHECK(empty_b.ids == std::vector<int32_t>{101, 2204, 2154, 102, 102});
  CHECK(empty_b.type_ids == std::vector<int32_t>{0, 0, 0, 0, 1});
  EncodeOptions longest;
  longest.pad_to_longest = true;
  const auto batch = tok.encode_batch({"a", "a b c"}, longest, 2);
  CHECK(batch[0].ids == std::vector<int32_t>{101, 1037, 102, 0, 0});
  CHECK(tok.decode(e.ids) == "hello world unaffable!");
}

TEST_CASE("word starts: WordPiece continuations do not start a word", "[tokenizer][iface]") {
  const Tokenizer& tok = bert();
  std::vector<bool> starts;
  for (const Token& t : tok.tokenize("unaffable, hi")) starts.push_back(tok.starts_word(t.id));
  CHECK(starts == std::vector<bool>{true, false, false, true, true});  // una ##ffa ##ble , hi
}

TEST_CASE("the special-token template decides where specials go and what truncation leaves room for", "[tokenizer][iface]") {
  const Tokenizer& tok = prefix_tokenizer();
  EncodeOptions opt;
  const Encoding one = tok.encode("the cats", opt);  // ▁the ▁cat s <sep> <cls>
  CHECK(one.ids == std::vector<int32_t>{5, 9, 16, 3, 2});
  CHECK(one.type_ids == std::vector<int32_t>{0, 0, 0, 0, 2});
  CHECK(one.special_tokens_mask == std::vector<int32_t>{0, 0, 0, 1, 1});
  opt.max_length = 5;
  const Encoding pair = tok.encode_pair("the cat", "sat on the mat", opt);  // 3 specials leave 2 tokens
  CHECK(pair.ids == std::vector<int32_t>{5, 3, 10, 3, 2});
  CHECK(tok.decode(tok.encode("the unaffable cats").ids) == "the unaffable cats");
}

TEST_CASE("whole-word masking follows the tokenizer's word starts, ## or not", "[tokenizer][iface][pretraining]") {
  const PrefixTokenizer& tok = prefix_tokenizer();
  const MaskingVocab mv = MaskingVocab::from(tok);
  Instance base;
  base.tokens = {tok.cls_id()};
  for (const Token& t : tok.tokenize("the unaffable cat sat on the reversible mats")) base.tokens.push_back(t.id);
  base.a_end = base.tokens.size();
  base.tokens.push_back(tok.sep_id());
  for (const Token& t : tok.tokenize("unaffable cats")) base.tokens.push_back(t.id);
  base.tokens.push_back(tok.sep_id());
  // the words, by token positions
  std::vector<std::vector<size_t>> words;
  for (size_t i = 1; i < base.tokens.size(); ++i) {
    if (tok.is_special(base.tokens[i])) continue;
    if (tok.starts_word(base.tokens[i]) || tok.is_special(base.tokens[i - 1])) words.emplace_back();
    words.back().push_back(i);
  }
  REQUIRE(words.size() == 10);
  PretrainingOptions opt;
  opt.masked_lm_prob = 0.3f;
  size_t split_words[2] = {0, 0}, multi_piece_masked = 0;
  for (bool whole : {true, false}) {
    opt.whole_word_mask = whole;
    for (uint64_t seed = 0; seed < 200; ++seed) {
      Instance inst = base;
      xg::Generator rng(seed);
      mask_instance(inst, opt, mv, rng);
      std::vector<bool> masked(inst.tokens.size(), false);
      for (int32_t p : inst.masked_positions) masked[size_t(p)] = true;
      for (const auto& w : words) {
        size_t n = 0;
        for (size_t p : w) n += masked[p];
        split_words[whole] += n > 0 && n < w.size();
        multi_piece_masked += whole && w.size() > 1 && n == w.size();
      }
    }
  }
  CHECK(split_words[1] == 0);    // whole words only
  CHECK(split_words[0] > 0);     // which per-token masking would not give
  CHECK(multi_piece_masked > 0);
}

TEST_CASE("tokenizer directories: save_pretrained and load_tokenizer round trip", "[tokenizer][iface][files]") {
  TokenizerOptions o;
  o.lowercase = false;
  o.model_max_length = 512;
  BertTokenizer original = BertTokenizer::from_file(kVocab, o);
  original.add_special_tokens({"<ent>"});
  const std::string dir = fresh_dir("roundtrip");
  const Tokenizer& saved = original;
  saved.save_pretrained(dir);
  // the files transformers' BertTokenizerFast.save_pretrained writes, with its field names
  const auto config = read_json(dir + "/tokenizer_config.json");
  CHECK(config.at("tokenizer_class") == "BertTokenizer");
  CHECK(config.at("do_lower_case") == false);
  CHECK(config.at("strip_accents").is_null());
  CHECK(config.at("tokenize_chinese_chars") == true);
  CHECK(config.at("model_max_length") == 512);
  CHECK(config.at("clean_up_tokenization_spaces") == false);  // what decode() does, so transformers decodes alike
  CHECK(config.at("cls_token") == "[CLS]");
  CHECK(config.at("added_tokens_decoder").at("103").at("content") == "[MASK]");
  CHECK(config.at("added_tokens_decoder").at("30522").at("content") == "<ent>");
  const auto map = read_json(dir + "/special_tokens_map.json");
  CHECK(map == nlohmann::json{{"unk_token", "[UNK]"}, {"cls_token", "[CLS]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"},
                              {"mask_token", "[MASK]"}, {"additional_special_tokens", {"<ent>"}}});

  const std::unique_ptr<Tokenizer> loaded = load_tokenizer(dir);
  CHECK(loaded->tokenizer_class() == "BertTokenizer");
  CHECK(loaded->vocab_size() == original.vocab_size());
  CHECK(loaded->model_max_length() == 512);
  CHECK(loaded->special_tokens().additional == std::vector<std::string>{"<ent>"});
  auto lines = test_lines();
  lines.push_back("Paris <ent>Köln</ent> [MASK]");
  REQUIRE(lines.size() > 1000);
  size_t differ = 0;
  for (const auto& l : lines) {
    const bool same = loaded->encode(l).ids == saved.encode(l).ids;
    differ += !same;
    if (!same) {
      INFO(l);
      CHECK(same);
    }
  }
  CHECK(differ == 0);
  CHECK(loaded->encode("Hello").ids != bert().encode("Hello").ids);  // cased survived the trip
  fs::remove_all(dir);
}

TEST_CASE("tokenizer directories as Hugging Face writes them, old and new", "[tokenizer][iface][files]") {
  const std::string dir = fresh_dir("hf_layout");
  fs::copy_file(kVocab, dir + "/vocab.txt");
  // transformers 4.x: "no limit" as int(1e30), special tokens as AddedToken objects
  write(dir + "/tokenizer_config.json",
        R"({"do_lower_case": true, "model_max_length": 1000000000000000019884624838656, "tokenizer_class": "BertTokenizerFast"})");
  write(dir + "/special_tokens_map.json",
        R"({"mask_token": {"content": "[MASK]", "lstrip": false, "normalized": false, "rstrip": false, "single_word": false}})");
  auto tok = load_tokenizer(dir);
  CHECK(tok->model_max_length() == 0);
  // clean_up_tokenization_spaces absent: true, as transformers' BertTokenizer; decode then cleans
  // the whole text up as transformers' decode does
  const std::vector<int32_t> ids = bert().encode("it isn't so , ok").ids;
  CHECK(bert().decode(ids) == "it isn ' t so, ok");
  CHECK(tok->decode(ids) == "it isn't so, ok");
  CHECK(tok->mask_id() == 103);
  CHECK(tok->encode("Hello, World").ids == bert().encode("Hello, World").ids);
  // ELECTRA's checkpoints name their WordPiece tokenizer after the family
  write(dir + "/tokenizer_config.json", R"({"do_lower_case": true, "tokenizer_class": "ElectraTokenizer"})");
  CHECK(load_tokenizer(dir)->encode("Hello, World").ids == bert().encode("Hello, World").ids);
  // older checkpoints (and this project's before tokenizer files): vocab.txt and config.json only
  fs::remove(dir + "/tokenizer_config.json");
  fs::remove(dir + "/special_tokens_map.json");
  write(dir + "/config.json", R"({"model_type": "bert", "vocab_size": 30522})");
  // the class comes from the model family's registry entry; the text layer alone knows no families
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("model_type 'bert'"));
  tok = xg::models::load_tokenizer(dir);
  CHECK(tok->tokenizer_class() == "BertTokenizer");
  CHECK(tok->encode("Hello, World").ids == bert().encode("Hello, World").ids);
  // a vocabulary file or a directory, as the programs' --vocab flag takes them
  CHECK(open_tokenizer(kVocab)->encode("Hi").ids == xg::models::open_tokenizer(dir)->encode("Hi").ids);
  fs::remove_all(dir);
}

TEST_CASE("tokenizer directories: bad or missing files name the file and the field", "[tokenizer][iface][files][errors]") {
  const std::string dir = fresh_dir("errors");
  CHECK_THROWS_WITH(load_tokenizer(dir + "/nope"), Contains("not a directory"));
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("no tokenizer_config.json") && Contains("config.json"));
  const std::string config = dir + "/tokenizer_config.json";
  write(config, R"({"tokenizer_class": "BertTokenizer"})");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains(dir + "/vocab.txt") && Contains("missing"));
  fs::copy_file(kVocab, dir + "/vocab.txt");
  write(config, R"({"tokenizer_class": "BertTokenizer", "do_lower_case": )");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains(config) && Contains("not valid JSON"));
  write(config, R"({"tokenizer_class": "GPT2Tokenizer"})");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains(config) && Contains("'GPT2Tokenizer'") && Contains("BertTokenizer"));
  write(config, R"({"tokenizer_class": "BertTokenizer", "do_lower_case": "yes"})");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains(config) && Contains("'do_lower_case'") && Contains("\"yes\""));
  write(config, R"({"tokenizer_class": "BertTokenizer", "model_max_length": -1})");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("'model_max_length'") && Contains("-1"));
  write(config, R"({"tokenizer_class": "BertTokenizer", "cls_token": "<s>"})");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains(dir) && Contains("'<s>'"));
  write(config, R"({"tokenizer_class": "BertTokenizer"})");
  write(dir + "/special_tokens_map.json", R"({"mask_token": 7})");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("special_tokens_map.json") && Contains("'mask_token'"));
  write(dir + "/special_tokens_map.json", "[]");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("special_tokens_map.json") && Contains("JSON object"));
  fs::remove(dir + "/special_tokens_map.json");
  // a family this project does not have yet: written fine, refused on reading with the class named
  prefix_tokenizer().save_pretrained(dir);
  CHECK(read_json(config).at("tokenizer_class") == "PrefixTokenizer");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("'PrefixTokenizer'"));
  write(config, "{}");
  write(dir + "/config.json", R"({"model_type": "gpt2"})");
  CHECK_THROWS_WITH(xg::models::load_tokenizer(dir), Contains("config.json") && Contains("'gpt2'"));
  fs::remove_all(dir);
}

TEST_CASE("tokenizer directories: added-token flags a tokenizer does not implement are refused", "[tokenizer][iface][files][errors]") {
  // Loading them anyway would match the token otherwise than transformers does, without a word.
  const std::string dir = fresh_dir("added_flags");
  fs::copy_file(kVocab, dir + "/vocab.txt");
  const std::string config = dir + "/tokenizer_config.json";
  const auto bert_with = [&](const std::string& flags, bool lower) {
    write(config, fmt::format(R"({{"tokenizer_class": "BertTokenizer", "do_lower_case": {}, "added_tokens_decoder":
      {{"30522": {{"content": "[E1]", "special": true, "lstrip": false, "rstrip": false, "single_word": false,
                  "normalized": false, {}}}}}}})", lower, flags));
  };
  bert_with(R"("rstrip": true)", true);
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains(config) && Contains("'[E1]' (id 30522) sets rstrip"));
  bert_with(R"("single_word": true)", true);
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("sets single_word"));
  bert_with(R"("lstrip": true)", true);
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("sets lstrip"));
  bert_with(R"("normalized": true)", true);  // matched in lowercased text: [e1] too
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("sets normalized"));
  bert_with(R"("normalized": true)", false);  // nothing normalizes it: the same matches
  CHECK(load_tokenizer(dir)->encode("a [E1] b").ids[2] == 30522);
  bert_with(R"("normalized": false)", true);
  CHECK(load_tokenizer(dir)->encode("a [E1] b").ids[2] == 30522);

  SECTION("ALBERT: only its own special tokens") {
    const std::string spiece = fresh_dir("added_albert");
    fs::copy_file(std::string(XGRAD_TEST_DATA_DIR) + "/spiece/spiece.model", spiece + "/spiece.model");
    const std::string albert_config = spiece + "/tokenizer_config.json";
    write(albert_config, R"({"tokenizer_class": "AlbertTokenizer", "added_tokens_decoder": {"4": {"content": "[MASK]",
      "special": true, "lstrip": true, "rstrip": false, "single_word": false, "normalized": false}}, "cls_token": "[CLS]"})");
    CHECK(load_tokenizer(spiece)->mask_id() == 4);
    write(albert_config, R"({"tokenizer_class": "AlbertTokenizer", "added_tokens_decoder": {"2000": {"content": "<e1>",
      "special": true}}})");
    CHECK_THROWS_WITH(load_tokenizer(spiece), Contains(albert_config) && Contains("added token '<e1>' (id 2000) is not supported"));
    write(albert_config, R"({"tokenizer_class": "AlbertTokenizer", "additional_special_tokens": ["<e1>"]})");
    CHECK_THROWS_WITH(load_tokenizer(spiece), Contains("additional special token '<e1>'"));
    write(albert_config, R"({"tokenizer_class": "AlbertTokenizer", "cls_token": "<s>"})");
    CHECK_THROWS_WITH(load_tokenizer(spiece), Contains("cls_token '<s>' is not supported"));
    fs::remove_all(spiece);
  }
  fs::remove_all(dir);
}
