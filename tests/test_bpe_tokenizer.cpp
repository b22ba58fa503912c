// Byte-level BPE (RoBERTa / GPT-2) against Hugging Face's RobertaTokenizerFast on GPT-2's files
// (tests/data/bpe_goldens.json and tokenizer_corpus.roberta.ids from tools/gen_bpe_goldens.py):
// ids and character offsets of hard lines with and without add_prefix_space and trim_offsets,
// pairs under every truncation strategy, decodes (random id sequences with invalid UTF-8 among
// them), 1,000 corpus lines; the byte-level pieces; files, directories and their errors.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/golden.hpp"
#include "tests/temp_path.hpp"
#include "text/byte_level.hpp"
#include "models/core/family_tokenizer.hpp"
#include "text/load_tokenizer.hpp"
#include "text/roberta_tokenizer.hpp"

using namespace xg::text;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
const std::string kData = std::string(XGRAD_TEST_DATA_DIR) + "/../../data/";
const std::string kVocab = kData + "gpt2-vocab.json", kMerges = kData + "gpt2-merges.txt";

const RobertaTokenizer& roberta(bool add_prefix_space = false, bool trim_offsets = true) {
  auto make = [](bool prefix, bool trim) {
    RobertaTokenizerOptions o;
    o.add_prefix_space = prefix;
    o.trim_offsets = trim;
    return RobertaTokenizer::from_files(kVocab, kMerges, o);
  };
  static const RobertaTokenizer plain = make(false, true), prefixed = make(true, true), untrimmed = make(false, false);
  return add_prefix_space ? prefixed : trim_offsets ? plain : untrimmed;
}

const nlohmann::json& goldens() {
  static const nlohmann::json j = xg::test::load_golden("bpe_goldens.json");
  return j;
}

std::vector<std::pair<size_t, size_t>> offsets_of(const nlohmann::json& j) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const auto& o : j) out.emplace_back(o[0].get<size_t>(), o[1].get<size_t>());
  return out;
}

void check_singles(const RobertaTokenizer& tok, const char* key, size_t at_least) {
  size_t n = 0;
  for (const auto& c : goldens().at(key)) {
    const std::string text = c.at("text");
    const Encoding e = tok.encode(text);
    INFO(key << " line " << n << ": " << nlohmann::json(text).dump());
    CHECK(e.ids == c.at("ids").get<std::vector<int32_t>>());
    CHECK(e.offsets == offsets_of(c.at("offsets")));
    ++n;
  }
  CHECK(n >= at_least);
}

std::string fresh_dir(const std::string& name) {
  const std::string d = temp_path("xgrad_bpe_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
}  // namespace

TEST_CASE("byte-level BPE parity on hard lines: ids and offsets", "[bpe][parity]") {
  check_singles(roberta(), "single", 400);
  check_singles(roberta(true), "add_prefix_space", 200);
  check_singles(roberta(false, false), "no_trim_offsets", 200);
}

TEST_CASE("byte-level BPE parity on pairs under every truncation strategy", "[bpe][parity]") {
  size_t n = 0;
  for (const auto& p : goldens().at("pairs")) {
    EncodeOptions opt;
    opt.max_length = p.at("maxLength").get<size_t>();
    const std::string s = p.at("strategy");
    opt.truncation = s == "LongestFirst" ? Truncation::LongestFirst : s == "OnlyFirst" ? Truncation::OnlyFirst : Truncation::OnlySecond;
    const std::string a = p.at("a"), b = p.at("b");
    INFO(a << " | " << b << " max " << opt.max_length << " " << s);
    if (p.contains("error")) {
      CHECK_THROWS_WITH(roberta().encode_pair(a, b, opt), Contains("truncation"));
      continue;
    }
    const Encoding e = roberta().encode_pair(a, b, opt);
    CHECK(e.ids == p.at("ids").get<std::vector<int32_t>>());
    CHECK(e.type_ids == p.at("type_ids").get<std::vector<int32_t>>());
    CHECK(e.offsets == offsets_of(p.at("offsets")));
    ++n;
  }
  CHECK(n >= 100);
}

TEST_CASE("byte-level BPE decodes as Hugging Face, invalid UTF-8 becoming U+FFFD", "[bpe][parity]") {
  size_t n = 0;
  for (const auto& d : goldens().at("decode")) {
    const auto ids = d.at("ids").get<std::vector<int32_t>>();
    INFO(nlohmann::json(ids).dump());
    CHECK(roberta().decode(ids, d.at("skip").get<bool>()) == d.at("text").get<std::string>());
    ++n;
  }
  CHECK(n >= 1400);
  // Every line without special tokens in it comes back exactly.
  size_t round_trips = 0;
  for (const auto& c : goldens().at("single")) {
    const std::string text = c.at("text");
    bool has_special = false;
    for (const char* s : {"<s>", "</s>", "<pad>", "<unk>", "<mask>"}) has_special |= text.find(s) != std::string::npos;
    if (has_special) continue;
    CHECK(roberta().decode(roberta().encode(text).ids) == text);
    ++round_trips;
  }
  CHECK(round_trips >= 400);
}

TEST_CASE("byte-level BPE parity on 1,000 corpus lines, batch-encoded on all cores", "[bpe][parity]") {
  std::ifstream in(std::string(XGRAD_TEST_DATA_DIR) + "/tokenizer_corpus.txt"), ids_in(std::string(XGRAD_TEST_DATA_DIR) + "/tokenizer_corpus.roberta.ids");
  std::vector<std::string> lines;
  for (std::string l; lines.size() < 1000 && std::getline(in, l);) lines.push_back(l);
  REQUIRE(lines.size() == 1000);
  EncodeOptions pad;
  pad.pad_to_longest = true;
  const auto enc = roberta().encode_batch(lines, pad, 0);
  REQUIRE(ids_in.good());
  size_t mismatches = 0, compared = 0;
  std::string expected;
  for (size_t i = 0; i < lines.size() && std::getline(ids_in, expected); ++i, ++compared) {
    std::istringstream s(expected);
    std::vector<int32_t> ids;
    for (int32_t v; s >> v;) ids.push_back(v);
    std::vector<int32_t> got;
    for (size_t k = 0; k < enc[i].size() && enc[i].attention_mask[k]; ++k) got.push_back(enc[i].ids[k]);
    for (size_t k = got.size(); k < enc[i].size(); ++k) CHECK(enc[i].ids[k] == 50260);  // <pad>
    if (got != ids) {
      ++mismatches;
      INFO("line " << i << ": " << lines[i]);
      CHECK(got == ids);
    }
  }
  CHECK(compared == lines.size());  // a missing or short golden compares nothing
  CHECK(mismatches == 0);
}

TEST_CASE("byte-level pieces: the byte alphabet, GPT-2's pre-tokens, lossy UTF-8", "[bpe]") {
  CHECK(byte_to_unicode()[' '] == U'\u0120');
  CHECK(byte_to_unicode()['\n'] == U'\u010A');
  CHECK(byte_to_unicode()['a'] == U'a');
  CHECK(byte_to_unicode()[0xAD] == U'\u0143');
  for (int b = 0; b < 256; ++b) CHECK(unicode_to_byte(byte_to_unicode()[size_t(b)]) == b);
  CHECK(unicode_to_byte(U'<') == '<');
  CHECK(unicode_to_byte(U'\u0144') == -1);
  CHECK(to_byte_level(" a\n") == "\xC4\xA0" "a" "\xC4\x8A");
  CHECK(from_byte_level("\xC4\xA0" "a") == " a");
  CHECK(from_byte_level("<mask>") == "<mask>");
  CHECK(from_byte_level("\xE2\x82\xAC") == "\xE2\x82\xAC");  // "€" has no stand-in: its own bytes

  auto split = [](const std::u32string& s) {
    std::vector<char32_t> cps(s.begin(), s.end());
    std::vector<std::pair<size_t, size_t>> r;
    split_gpt2(cps, 0, cps.size(), r);
    std::vector<std::u32string> out;
    for (auto [a, b] : r) out.push_back(s.substr(a, b - a));
    return out;
  };
  CHECK(split(U"it's  a\ttest 123!!") == std::vector<std::u32string>{U"it", U"'s", U" ", U" a", U"\t", U"test", U" 123", U"!!"});
  CHECK(split(U"x   ") == std::vector<std::u32string>{U"x", U"   "});
  CHECK(split(U" 's'll") == std::vector<std::u32string>{U" '", U"s", U"'ll"});

  CHECK(utf8_lossy("ok") == "ok");
  CHECK(utf8_lossy("\xF0\x9F\x98") == "\xEF\xBF\xBD");               // a truncated emoji: one U+FFFD
  CHECK(utf8_lossy("\xE0\x80z") == "\xEF\xBF\xBD\xEF\xBF\xBDz");      // E0 80 is no prefix: two
  CHECK(utf8_lossy("\xC0\xFF\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(utf8_lossy("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
}

TEST_CASE("RobertaTokenizer: specials, template, word starts, padding, invalid UTF-8", "[bpe][iface]") {
  const Tokenizer& tok = roberta();
  CHECK(tok.tokenizer_class() == "RobertaTokenizer");
  CHECK(tok.vocab_size() == 50262);
  CHECK(tok.cls_id() == 50257);
  CHECK(tok.sep_id() == 50258);
  CHECK(tok.unk_id() == 50259);
  CHECK(tok.pad_id() == 50260);
  CHECK(tok.mask_id() == 50261);
  CHECK(tok.special_tokens().bos == "<s>");
  CHECK(tok.is_special(50261));
  CHECK_FALSE(tok.is_special(0));
  CHECK(tok.starts_word(tok.token_to_id("\xC4\xA0the")));  // "Ġthe"
  CHECK_FALSE(tok.starts_word(tok.token_to_id("ing")));
  CHECK(tok.starts_word(tok.token_to_id(",")));
  CHECK(tok.starts_word(tok.token_to_id("\xC4\x8A")));  // "Ċ", a newline
  CHECK(tok.starts_word(50261));
  // Word starts agree with Hugging Face's word ids (pre-tokens) on this line: Token|izers, Ġ123|45|67.
  const Encoding words = tok.encode("Tokenizers split unbelievably, 1234567 times!");
  CHECK(words.ids == std::vector<int32_t>{50257, 30642, 11341, 6626, 48943, 11, 17031, 2231, 3134, 1661, 0, 50258});
  std::vector<bool> starts;
  for (size_t i = 2; i + 1 < words.size(); ++i) starts.push_back(tok.starts_word(words.ids[i]));
  CHECK(starts == std::vector<bool>{false, true, true, true, true, false, false, true, true});
  CHECK_THROWS_WITH(tok.id_to_token(50262), Contains("50262"));
  CHECK_THROWS_WITH(tok.decode({50262}), Contains("50262"));

  EncodeOptions opt;
  opt.pad_to = 8;
  const Encoding e = tok.encode("Hello world", opt);
  CHECK(e.ids == std::vector<int32_t>{50257, 15496, 995, 50258, 50260, 50260, 50260, 50260});
  CHECK(e.attention_mask == std::vector<int32_t>{1, 1, 1, 1, 0, 0, 0, 0});
  CHECK(e.special_tokens_mask == std::vector<int32_t>{1, 0, 0, 1, 1, 1, 1, 1});

  CHECK_THROWS_WITH(tok.encode("bad \xFF byte"), Contains("input") && Contains("byte"));
  RobertaTokenizerOptions o;
  o.invalid_utf8 = InvalidUtf8::Replace;
  const RobertaTokenizer lenient = RobertaTokenizer::from_files(kVocab, kMerges, o);
  CHECK(lenient.decode(lenient.encode("bad \xFF byte").ids) == "bad \xEF\xBF\xBD byte");
}

TEST_CASE("RobertaTokenizer directories: save, load, Hugging Face's own, bare files", "[bpe][files]") {
  const std::string dir = fresh_dir("save");
  roberta().save_pretrained(dir);
  for (const char* f : {"vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"}) CHECK(fs::exists(fs::path(dir) / f));
  std::ifstream cfg(dir + "/tokenizer_config.json");
  const auto config = nlohmann::json::parse(cfg);
  CHECK(config.at("tokenizer_class") == "RobertaTokenizer");
  CHECK(config.at("added_tokens_decoder").at("50261").at("lstrip") == true);
  CHECK(config.at("added_tokens_decoder").at("50257").at("lstrip") == false);
  const std::vector<std::string> lines = {"the <mask> sat", "  spaces\tand\ttabs 😀", "<s>hello</s>"};
  auto same = [&](const Tokenizer& t) {
    for (const auto& l : lines) {
      CHECK(t.encode(l).ids == roberta().encode(l).ids);
      CHECK(t.encode(l).offsets == roberta().encode(l).offsets);
    }
  };
  same(*load_tokenizer(dir));
  same(*open_tokenizer(dir + "/vocab.json"));

  // The directory transformers 4.45 writes for RobertaTokenizerFast(GPT-2's files).
  const std::string hf = fresh_dir("hf");
  for (const char* f : {"tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"})
    fs::copy_file(std::string(XGRAD_TEST_DATA_DIR) + "/roberta_hf_dir/" + f, fs::path(hf) / f);
  fs::copy_file(kVocab, fs::path(hf) / "vocab.json");
  fs::copy_file(kMerges, fs::path(hf) / "merges.txt");
  const auto loaded = load_tokenizer(hf);
  CHECK(loaded->tokenizer_class() == "RobertaTokenizer");
  CHECK(loaded->model_max_length() == 0);  // int(1e30): no limit
  same(*loaded);

  // Bare vocab.json + merges.txt, and a config.json naming the model type.
  const std::string bare = fresh_dir("bare");
  fs::copy_file(kVocab, fs::path(bare) / "vocab.json");
  fs::copy_file(kMerges, fs::path(bare) / "merges.txt");
  same(*load_tokenizer(bare));
  write(bare + "/config.json", R"({"model_type": "roberta"})");
  same(*xg::models::load_tokenizer(bare));  // the class from the family registry
  fs::remove(fs::path(bare) / "merges.txt");
  CHECK_THROWS_WITH(xg::models::load_tokenizer(bare), Contains("merges.txt") && Contains("missing"));
  CHECK_THROWS_WITH(open_tokenizer(bare + "/vocab.json"), Contains("merges.txt"));
  for (const auto& d : {dir, hf, bare}) fs::remove_all(d);
}

TEST_CASE("BPE files: malformed, truncated or inconsistent vocab.json and merges.txt", "[bpe][files][errors]") {
  const std::string dir = fresh_dir("errors");
  const std::string v = dir + "/vocab.json", m = dir + "/merges.txt";
  // The 256 byte stand-ins, "ab" and "abc".
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) {
    std::string s;
    xg::text::append_utf8(s, byte_to_unicode()[size_t(b)]);
    vocab[s] = b;
  }
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  write(v, vocab.dump());
  write(m, "#version: 0.2\na b\nab c\n");
  const BpeModel ok = BpeModel::from_files(v, m);
  std::vector<std::pair<int32_t, uint32_t>> toks;
  ok.encode_word("abcab", toks);
  CHECK(toks == std::vector<std::pair<int32_t, uint32_t>>{{257, 3}, {256, 2}});

  write(m, "#version: 0.2\na b\nabc\n");
  CHECK_THROWS_WITH(BpeModel::from_files(v, m), Contains("merges.txt:3") && Contains("'abc'"));
  write(m, "a b c\n");
  CHECK_THROWS_WITH(BpeModel::from_files(v, m), Contains("merges.txt:1") && Contains("two tokens"));
  write(m, "a b\nab x\n");
  CHECK_THROWS_WITH(BpeModel::from_files(v, m), Contains("merges.txt") && Contains("merge 2 'ab x'") && Contains("'abx' is not in the vocabulary"));
  write(m, "a b\nq z\n");
  vocab.erase("z");
  vocab["zz"] = 122;  // keeps the ids dense; "z" itself is gone
  write(v, vocab.dump());
  CHECK_THROWS_WITH(BpeModel::from_files(v, m), Contains("lacks 'z'") && Contains("0x7A"));
  write(v, R"({"a": 0, "b": 2})");
  CHECK_THROWS_WITH(BpeModel::from_files(v, m), Contains("vocab.json") && Contains("'b' has id 2") && Contains("0..1"));
  write(v, R"({"a": 0, "b": 0})");
  CHECK_THROWS_WITH(BpeModel::from_files(v, m), Contains("id 0 is given to both"));
  write(v, R"({"a": 0, "b": )");
  CHECK_THROWS_WITH(BpeModel::from_files(v, m), Contains("vocab.json") && Contains("not valid JSON"));
  write(v, R"(["a", "b"])");
  CHECK_THROWS_WITH(BpeModel::from_files(v, m), Contains("vocab.json") && Contains("object"));
  CHECK_THROWS_WITH(BpeModel::from_files(dir + "/none.json", m), Contains("none.json") && Contains("cannot open"));
  fs::remove_all(dir);
}
