// Exact parity with Hugging Face's tokenizers 0.23.2 (tests/data/tokenizer_* from
// tools/gen_tokenizer_goldens.py, formerly its Node twin): ids and character offsets of 348 tricky
// lines, pairs under every truncation strategy, decoding, and 3,000 corpus lines; uncased and cased.
#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/golden.hpp"
#include "tests/tokenizer_goldens.hpp"
#include "text/bert_tokenizer.hpp"
#include "text/vocab.hpp"
#include "tests/temp_path.hpp"

using namespace xg::text;
using Catch::Matchers::Contains;

namespace {
const std::string kVocab = std::string(XGRAD_TEST_DATA_DIR) + "/../../data/bert-base-uncased-vocab.txt";

const BertTokenizer& tokenizer(bool cased) {
  static const BertTokenizer uncased = BertTokenizer::from_file(kVocab);
  static const BertTokenizer with_case = [] {
    TokenizerOptions o;
    o.lowercase = false;
    return BertTokenizer::from_file(kVocab, o);
  }();
  return cased ? with_case : uncased;
}

const nlohmann::json& goldens() {
  static const nlohmann::json j = xg::test::load_golden("tokenizer_goldens.json");
  return j;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}
}  // namespace

TEST_CASE("a copied Vocab looks tokens up in its own strings, outliving the original", "[tokenizer]") {
  const std::vector<std::string> tokens = {"[PAD]", "hello", "a-token-longer-than-the-small-string-buffer"};
  auto original = std::make_unique<Vocab>(tokens);
  Vocab copy(*original);
  Vocab assigned;
  assigned = *original;
  original.reset();
  // Same-sized allocations next: freed memory comes back holding other text, so views into the
  // original's strings (the default copy's) would now read "world" and miss (AddressSanitizer
  // reports the read itself).
  const Vocab reuse(std::vector<std::string>{"[SEP]", "world", "b-token-longer-than-the-small-string-buffer"});
  for (const Vocab* v : {&copy, &assigned}) {
    CHECK(v->id("hello") == 1);
    CHECK(v->id(tokens[2]) == 2);
    CHECK(v->id("world") == -1);
    CHECK(v->token(1) == "hello");
  }
  CHECK(copy.add("new") == 3);
  const Vocab moved = std::move(copy);  // a move keeps the strings where the views point
  CHECK(moved.id("new") == 3);
  CHECK(moved.id("hello") == 1);
  CHECK(reuse.id("world") == 1);
}

TEST_CASE("tokenizer parity on tricky lines: ids and offsets", "[tokenizer][parity]") {
  for (bool cased : {false, true}) {
    const char* key = cased ? "cased" : "uncased";
    CHECK(xg::test::check_single_goldens(tokenizer(cased), goldens().at(key).at("single"), key) >= 300);
  }
}

TEST_CASE("CJK compatibility ideographs decompose after CJK spacing where accents are stripped", "[tokenizer][parity]") {
  // Ids from tokenizers 0.20.3's BertWordPieceTokenizer on this vocabulary: U+F981 decomposes to
  // U+5973 (1815) when accents are stripped, stays [UNK] (100) when they are kept; U+FA0E has no
  // decomposition.
  TokenizerOptions cased_stripped;
  cased_stripped.lowercase = false;
  cased_stripped.strip_accents = true;
  const BertTokenizer stripping = BertTokenizer::from_file(kVocab, cased_stripped);
  for (const BertTokenizer* tok : {&tokenizer(false), &stripping}) {
    const Encoding e = tok->encode("a\uF981b");
    CHECK(e.ids == std::vector<int32_t>{101, 1037, 1815, 1038, 102});
    CHECK(e.offsets == std::vector<std::pair<size_t, size_t>>{{0, 0}, {0, 1}, {1, 2}, {2, 3}, {0, 0}});
  }
  CHECK(tokenizer(true).encode("a\uF981b").ids == std::vector<int32_t>{101, 1037, 100, 1038, 102});
  const Encoding e = tokenizer(false).encode("\uF900\uFA0E \U0002F800x");
  CHECK(e.ids == std::vector<int32_t>{101, 100, 100, 100, 1060, 102});
  CHECK(e.offsets == std::vector<std::pair<size_t, size_t>>{{0, 0}, {0, 1}, {1, 2}, {3, 4}, {4, 5}, {0, 0}});
}

TEST_CASE("tokenizer parity on pairs under every truncation strategy", "[tokenizer][parity]") {
  for (bool cased : {false, true}) {
    for (const auto& p : goldens().at(cased ? "cased" : "uncased").at("pairs")) {
      EncodeOptions opt;
      opt.max_length = p.at("maxLength").get<size_t>();
      const std::string s = p.at("strategy");
      opt.truncation = s == "LongestFirst" ? Truncation::LongestFirst : s == "OnlyFirst" ? Truncation::OnlyFirst : Truncation::OnlySecond;
      INFO(p.at("a").get<std::string>() << " | " << p.at("b").get<std::string>() << " max " << opt.max_length << " " << s);
      if (p.contains("error")) {
        CHECK_THROWS_WITH(tokenizer(cased).encode_pair(p.at("a").get<std::string>(), p.at("b").get<std::string>(), opt),
                          Contains("truncation"));
        continue;
      }
      const Encoding e = tokenizer(cased).encode_pair(p.at("a").get<std::string>(), p.at("b").get<std::string>(), opt);
      CHECK(e.ids == p.at("ids").get<std::vector<int32_t>>());
      CHECK(e.type_ids == p.at("type_ids").get<std::vector<int32_t>>());
    }
  }
}

TEST_CASE("tokenizer decode matches Hugging Face's WordPiece decoder", "[tokenizer][parity]") {
  for (bool cased : {false, true})
    for (const auto& d : goldens().at(cased ? "cased" : "uncased").at("decode")) {
      INFO(d.at("text").get<std::string>());
      CHECK(tokenizer(cased).decode(d.at("ids").get<std::vector<int32_t>>()) == d.at("text").get<std::string>());
    }
}

TEST_CASE("tokenizer parity on 3,000 corpus lines, batch-encoded on all cores", "[tokenizer][parity]") {
  const auto lines = read_lines(std::string(XGRAD_TEST_DATA_DIR) + "/tokenizer_corpus.txt");
  REQUIRE(lines.size() == 3000);
  for (bool cased : {false, true}) {
    const auto expected = read_lines(std::string(XGRAD_TEST_DATA_DIR) + "/tokenizer_corpus." + (cased ? "cased" : "uncased") + ".ids");
    EncodeOptions no_pad;
    const auto enc = tokenizer(cased).encode_batch(lines, no_pad, 2);
    size_t mismatches = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      std::istringstream in(expected[i]);
      std::vector<int32_t> ids;
      for (int32_t v; in >> v;) ids.push_back(v);
      std::vector<int32_t> got;
      for (size_t k = 0; k < enc[i].size() && enc[i].attention_mask[k]; ++k) got.push_back(enc[i].ids[k]);
      if (got != ids) {
        ++mismatches;
        INFO("line " << i << ": " << lines[i]);
        CHECK(got == ids);
      }
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("encoding: padding, masks, special tokens, batch padding", "[tokenizer]") {
  const auto& tok = tokenizer(false);
  EncodeOptions opt;
  opt.pad_to = 10;
  const Encoding e = tok.encode("hello world", opt);
  CHECK(e.ids == std::vector<int32_t>{101, 7592, 2088, 102, 0, 0, 0, 0, 0, 0});
  CHECK(e.attention_mask == std::vector<int32_t>{1, 1, 1, 1, 0, 0, 0, 0, 0, 0});
  CHECK(e.special_tokens_mask == std::vector<int32_t>{1, 0, 0, 1, 1, 1, 1, 1, 1, 1});
  EncodeOptions longest;
  longest.pad_to_longest = true;
  const auto batch = tok.encode_batch({"a", "a b c d"}, longest);
  CHECK(batch[0].size() == batch[1].size());
  CHECK(batch[0].attention_mask == std::vector<int32_t>{1, 1, 1, 0, 0, 0});
  EncodeOptions no_special;
  no_special.add_special_tokens = false;
  CHECK(tok.encode("hello", no_special).ids == std::vector<int32_t>{7592});
  CHECK(tok.decode({101, 7592, 1010, 2088, 999, 102}) == "hello, world!");
  CHECK(tok.decode({101, 7592, 102}, /*skip_special_tokens=*/false) == "[CLS] hello [SEP]");
}

TEST_CASE("user-added special tokens are kept whole", "[tokenizer]") {
  BertTokenizer tok = BertTokenizer::from_file(kVocab);
  tok.add_special_tokens({"<ent>", "</ent>"});
  const auto t = tok.tokenize("see <ent>Paris</ent> now");
  REQUIRE(t.size() == 5);
  CHECK(tok.vocab().token(t[1].id) == "<ent>");
  CHECK(t[1].start == 4);
  CHECK(t[1].end == 9);
  CHECK(tok.vocab().token(t[2].id) == "paris");
  CHECK(tok.is_special(t[3].id));
}

TEST_CASE("invalid UTF-8: a clear error naming the text, or replacement on request", "[tokenizer][errors]") {
  const std::string bad = "ok \xff\xfe bytes";
  CHECK_THROWS_WITH(tokenizer(false).tokenize(bad, "line 7"), Contains("line 7") && Contains("byte 3"));
  CHECK_THROWS_WITH(tokenizer(false).encode_batch({"fine", bad}), Contains("batch item 1"));
  for (const std::string& truncated : {std::string("caf\xc3"), std::string("\xe6\x9d"), std::string("\xed\xa0\x80")})  // cut sequence, surrogate
    CHECK_THROWS_AS(tokenizer(false).tokenize(truncated), std::invalid_argument);
  TokenizerOptions o;
  o.invalid_utf8 = InvalidUtf8::Replace;
  const BertTokenizer lenient = BertTokenizer::from_file(kVocab, o);
  // U+FFFD is then dropped by text cleaning, as Hugging Face does with it
  CHECK(lenient.encode(bad).ids == tokenizer(false).encode("ok  bytes").ids);
}

TEST_CASE("vocabulary files are validated", "[tokenizer][errors]") {
  CHECK_THROWS_WITH(Vocab::from_file("/nonexistent/vocab.txt"), Contains("/nonexistent/vocab.txt"));
  const std::string dup = temp_path("xgrad_dup_vocab.txt");
  std::ofstream(dup) << "[PAD]\na\nb\na\n";
  CHECK_THROWS_WITH(Vocab::from_file(dup), Contains(":4") && Contains("'a'") && Contains("line 2"));
  const std::string empty = temp_path("xgrad_empty_vocab.txt");
  std::ofstream(empty).flush();
  CHECK_THROWS_WITH(Vocab::from_file(empty), Contains("no tokens"));
  CHECK_THROWS_WITH(BertTokenizer(Vocab({"a", "b"})), Contains("[UNK]"));
}

TEST_CASE("vocab.txt with a byte-order mark or carriage-return line endings is named, not misread", "[tokenizer][errors]") {
  const std::string bom = temp_path("xgrad_vocab_bom.txt"), cr = temp_path("xgrad_vocab_cr.txt"), crlf = temp_path("xgrad_vocab_crlf.txt");
  std::ofstream(bom, std::ios::binary) << "\xEF\xBB\xBF[PAD]\n[UNK]\n";
  std::ofstream(cr, std::ios::binary) << "[PAD]\r[UNK]\r[CLS]\r";
  std::ofstream(crlf, std::ios::binary) << "[PAD]\r\n[UNK]\r\n";
  CHECK_THROWS_WITH(Vocab::from_file(bom), Contains(bom) && Contains("byte-order mark"));
  CHECK_THROWS_WITH(Vocab::from_file(cr), Contains(cr + ":1") && Contains("carriage return"));
  const Vocab v = Vocab::from_file(crlf);  // Windows line endings read as Unix ones
  CHECK(v.size() == 2);
  CHECK(v.id("[UNK]") == 1);
  for (const auto& p : {bom, cr, crlf}) std::remove(p.c_str());
}
