// ALBERT's SentencePiece tokenizer against transformers' slow AlbertTokenizer (goldens from
// tools/gen_spiece_goldens.py, with the small tests/data/spiece/spiece.model it trained), and
// training through the library's trainer.
#include <catch2/catch.hpp>

#include <cctype>
#include <cmath>
#include <cstring>
#include <iterator>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/temp_path.hpp"
#include "text/load_tokenizer.hpp"
#include "text/protobuf_wire.hpp"
#include "text/sentencepiece_tokenizer.hpp"

using namespace xg::text;
using Catch::Matchers::Contains;

namespace {
const std::string kDir = std::string(XGRAD_TEST_DATA_DIR) + "/spiece";
const std::string kModel = kDir + "/spiece.model";

const SentencePieceTokenizer& albert() {
  static const SentencePieceTokenizer t(kModel);
  return t;
}

const nlohmann::json& goldens() {
  static const nlohmann::json j = [] {
    std::ifstream in(kDir + "/goldens.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
  }();
  return j;
}
}  // namespace

TEST_CASE("SentencePiece ids match AlbertTokenizer on hard and corpus lines", "[spiece]") {
  const auto& g = goldens();
  REQUIRE(albert().vocab_size() == g["vocab_size"].get<size_t>());
  for (const auto& [tok, id] : g["special"].items()) CHECK(albert().token_to_id(tok) == id.get<int>());
  size_t n = 0;
  for (const auto& s : g["singles"]) {
    const std::string text = s["text"];
    INFO("text: " << text);
    CHECK(albert().encode(text).ids == s["ids"].get<std::vector<int32_t>>());
    ++n;
  }
  CHECK(n > 50);
}

TEST_CASE("SentencePiece pairs match AlbertTokenizer with token type ids", "[spiece]") {
  for (const auto& p : goldens()["pairs"]) {
    const std::string a = p["a"], b = p["b"];
    INFO("pair: " << a << " | " << b);
    const Encoding e = albert().encode_pair(a, b);
    CHECK(e.ids == p["ids"].get<std::vector<int32_t>>());
    CHECK(e.type_ids == p["type_ids"].get<std::vector<int32_t>>());
  }
}

TEST_CASE("SentencePiece decode matches AlbertTokenizer.decode", "[spiece]") {
  for (const auto& d : goldens()["decoded"]) {
    const std::string text = d["text"];
    INFO("text: " << text);
    CHECK(albert().decode(d["ids"].get<std::vector<int32_t>>()) == text);
  }
  // Round trip of lower-case ASCII text without runs of spaces.
  const std::string plain = "the quick brown fox jumps over the lazy dog.";
  CHECK(albert().decode(albert().encode(plain).ids) == plain);
  CHECK_THAT(albert().decode(albert().encode(plain).ids, false), Contains("[CLS]"));
}

TEST_CASE("SentencePiece offsets, truncation, padding, batch and word starts", "[spiece]") {
  const std::string text = "Caf\xC3\xA9  costs 1,000";  // "Café  costs 1,000": 17 code points
  const auto toks = albert().tokenize(text);
  REQUIRE(!toks.empty());
  for (const auto& t : toks) {
    CHECK(t.start <= t.end);
    CHECK(t.end <= 17);
  }
  CHECK(toks.front().start == 0);
  CHECK(toks.back().end == 17);

  EncodeOptions opt;
  opt.max_length = 5;
  opt.pad_to = 8;
  const Encoding e = albert().encode(text, opt);
  REQUIRE(e.size() == 8);
  CHECK(e.ids[0] == albert().cls_id());
  CHECK(e.ids[4] == albert().sep_id());
  CHECK(e.ids[5] == 0);
  CHECK(e.attention_mask == std::vector<int32_t>{1, 1, 1, 1, 1, 0, 0, 0});
  CHECK(albert().pad_id() == 0);
  CHECK(albert().unk_id() == 1);
  CHECK(albert().mask_id() == 4);

  std::vector<std::string> texts;
  for (const auto& s : goldens()["singles"]) texts.push_back(s["text"]);
  const auto batch = albert().encode_batch(texts, {}, 4);
  REQUIRE(batch.size() == texts.size());
  for (size_t i = 0; i < texts.size(); ++i) CHECK(batch[i].ids == goldens()["singles"][i]["ids"].get<std::vector<int32_t>>());

  const int32_t the = albert().token_to_id("\xE2\x96\x81the");
  REQUIRE(the >= 0);
  CHECK(albert().starts_word(the));
  // ALBERT's _is_start_piece_sp: punctuation, digits and non-ASCII pieces start words too (n-gram
  // masking then keeps "▁hello ," apart, and each CJK piece is its own word); letters continue one
  const auto starts = [](const std::string& piece) {
    const int32_t id = albert().token_to_id(piece);
    INFO(piece);
    REQUIRE(albert().id_to_token(id) == piece);
    return albert().starts_word(id);
  };
  CHECK(starts(","));
  CHECK(starts("<pad>"));
  for (int32_t id = 0; id < int32_t(albert().vocab_size()); ++id) {
    const std::string piece = albert().id_to_token(id);
    if (piece.rfind("\xE2\x96\x81", 0) == 0 || piece.size() < 2) continue;
    bool letters = true, digit = false;
    for (char c : piece) letters = letters && std::isalpha(static_cast<unsigned char>(c)), digit = digit || std::isdigit(static_cast<unsigned char>(c));
    INFO(piece);
    if (letters) CHECK_FALSE(albert().starts_word(id));
    if (digit) CHECK(albert().starts_word(id));
  }
}

TEST_CASE("SentencePiece errors name the missing or corrupt spiece.model", "[spiece]") {
  CHECK_THROWS_WITH(SentencePieceTokenizer("/nonexistent/spiece.model"), Contains("/nonexistent/spiece.model"));
  const std::string bad = temp_path("spiece-corrupt.model");
  { std::ofstream(bad) << "not a model"; }
  CHECK_THROWS_WITH(SentencePieceTokenizer(bad), Contains(bad));
  std::filesystem::remove(bad);
  CHECK_THROWS_WITH(albert().id_to_token(2000), Contains("2000"));
}

TEST_CASE("load_tokenizer picks ALBERT for a directory with spiece.model and saves it back", "[spiece]") {
  const auto t = load_tokenizer(kDir);
  CHECK(t->tokenizer_class() == "AlbertTokenizer");
  CHECK(t->encode("Hello World").ids == goldens()["singles"][2]["ids"].get<std::vector<int32_t>>());
  const std::string out = temp_path("spiece-saved");
  t->save_pretrained(out);
  const auto back = load_tokenizer(out);
  CHECK(back->tokenizer_class() == "AlbertTokenizer");
  CHECK(back->encode("Hello World").ids == t->encode("Hello World").ids);
  std::filesystem::remove_all(out);
}

TEST_CASE("train_sentencepiece trains a unigram model with ALBERT's special pieces", "[spiece]") {
  // The first 1500 lines of the small corpus: enough for 600 pieces, quick to train.
  const std::string corpus = temp_path("spiece-corpus.txt");
  {
    std::ifstream in(std::string(XGRAD_TEST_DATA_DIR) + "/../../data/pretrain_corpus_small.txt");
    std::ofstream o(corpus);
    std::string line;
    for (int i = 0; i < 1500 && std::getline(in, line); ++i) o << line << '\n';
  }
  const std::string out = temp_path("spiece-trained.model");
  train_sentencepiece(corpus, 600, out, 2);
  std::filesystem::remove(corpus);
  const SentencePieceTokenizer t(out);
  CHECK(t.vocab_size() == 600);
  CHECK(t.token_to_id("<pad>") == 0);
  CHECK(t.token_to_id("<unk>") == 1);
  CHECK(t.token_to_id("[CLS]") == 2);
  CHECK(t.token_to_id("[SEP]") == 3);
  CHECK(t.token_to_id("[MASK]") == 4);
  const Encoding e = t.encode("the model learns");
  CHECK(e.ids.size() >= 4);
  CHECK(t.decode(e.ids) == "the model learns");
  std::filesystem::remove(out);
  CHECK_THROWS_WITH(train_sentencepiece("/nonexistent/corpus.txt", 600, out), Contains("/nonexistent/corpus.txt"));
}

TEST_CASE("train_sentencepiece refuses what libsentencepiece would end the process over, and learns from long lines", "[spiece]") {
  const std::string corpus = temp_path("spiece-hostile.txt"), out = temp_path("spiece-hostile.model");
  const auto write = [&](const std::string& text) { std::ofstream(corpus, std::ios::binary) << text; };
  // only control characters, only whitespace: the library's CHECK would exit(-1) inside Train
  for (const std::string& text : {std::string("\x01\x02\x03\n\x04\x05\n"), std::string("   \n\t\t\n\n")}) {
    write(text);
    CHECK_THROWS_WITH(train_sentencepiece(corpus, 100, out, 1), Contains(corpus) && Contains("the corpus has no words"));
  }
  write("ok\n\xff\xfe binary\n");
  CHECK_THROWS_WITH(train_sentencepiece(corpus, 100, out, 1), Contains(corpus + ":2: invalid UTF-8 at byte 0"));
  write("a few words\n");
  CHECK_THROWS_WITH(train_sentencepiece(corpus, 5, out, 1), Contains("a vocabulary of 5 pieces") && Contains("<pad>, <unk>"));
  // the library's own errors come back as exceptions from the child process it trains in
  write("a b c\n");
  CHECK_THROWS_WITH(train_sentencepiece(corpus, 5000, out, 1),
                    Contains("[train_sentencepiece] training on " + corpus) && Contains("more than this corpus yields (at most"));
  CHECK(!std::filesystem::exists(out));
  CHECK(!std::filesystem::exists(out + ".training.model"));
  // a line past the library's default 4192 bytes is learned from, not skipped
  {
    std::ofstream o(corpus);
    for (int i = 0; i < 40; ++i) o << "the cat sat on the mat and the dog ran in the park\n";
    for (int i = 0; i < 600; ++i) o << "quixotry ";
    o << "\n";
  }
  CHECK_THROWS_WITH(train_sentencepiece(corpus, 24, out, 1), Contains("too small: this corpus needs at least 25"));
  train_sentencepiece(corpus, 27, out, 1);
  const SentencePieceTokenizer t(out);
  EncodeOptions plain;
  plain.add_special_tokens = false;
  CHECK(t.encode("quixotry", plain).ids.size() <= 2);  // only in the long line
  std::filesystem::remove(out);
  std::filesystem::remove(corpus);
}

namespace {
// The byte offset of the normalizer's precompiled character map in a model file and its length,
// found as NormalizerSpec lays it out: name (field 1, "nmt_nfkc"), then the map (field 2).
std::pair<size_t, size_t> charsmap_span(const std::string& model) {
  const size_t name = model.find("nmt_nfkc");
  REQUIRE(name != std::string::npos);
  size_t at = name + 8;
  REQUIRE(uint8_t(model[at++]) == 0x12);  // field 2, length-delimited
  size_t length = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t b = uint8_t(model[at++]);
    length |= size_t(b & 0x7F) << shift;
    if (!(b & 0x80)) break;
  }
  return {at, length};
}
}  // namespace

TEST_CASE("a corrupted spiece.model is refused when it loads, never crashes the first encode", "[spiece]") {
  const std::string path = std::string(XGRAD_TEST_DATA_DIR) + "/spiece/spiece.model";
  std::string model;
  {
    std::ifstream in(path, std::ios::binary);
    model.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto [map, map_size] = charsmap_span(model);
  uint32_t trie_bytes = 0;
  std::memcpy(&trie_bytes, model.data() + map, 4);
  REQUIRE(trie_bytes > 1024);
  REQUIRE(trie_bytes < map_size);
  const std::string out = temp_path("spiece-corrupt.model");
  const auto load_and_encode = [&](const std::string& bytes) {
    std::ofstream(out, std::ios::binary) << bytes;
    const SentencePieceTokenizer t(out);
    t.encode("Hello, wörld! ＡＢＣ ① ﬁne Å東京 \t tabs\u00a0and nbsp");
  };
  // the first unit of the trie all ones, its size intact (the library loads it and crashes in
  // Normalizer::NormalizePrefix on the first encode)
  std::string bad = model;
  std::memset(bad.data() + map + 4, 0xFF, 4);
  CHECK_THROWS_WITH(load_and_encode(bad), Contains(out) && Contains("normalizer's character map has a trie transition"));
  // random corruptions of the trie and of its strings: refused or harmless, never a crash
  uint64_t state = 42;
  const auto next = [&] { return state = state * 6364136223846793005ull + 1442695040888963407ull, state >> 33; };
  size_t refused = 0;
  for (int trial = 0; trial < 200; ++trial) {
    bad = model;
    for (int k = 0; k < 1 + trial % 8; ++k) bad[map + 4 + next() % (map_size - 4)] = char(next());
    try {
      load_and_encode(bad);
    } catch (const std::runtime_error&) {
      ++refused;
    }
  }
  CHECK(refused > 0);
  // pieces that are not text, scores that are not numbers
  // the piece "▁the" as its message holds it: field 1 (6 bytes), then its score (field 2, a float)
  const size_t piece = model.find(std::string("\x0a\x06\xe2\x96\x81the\x15", 9));
  REQUIRE(piece != std::string::npos);
  bad = model;
  bad[piece + 5] = char(0xFF);
  CHECK_THROWS_WITH(load_and_encode(bad), Contains("is not text: invalid UTF-8"));
  bad = model;
  const size_t score = piece + 8;
  const float nan = std::nanf("");
  std::memcpy(bad.data() + score + 1, &nan, 4);
  CHECK_THROWS_WITH(load_and_encode(bad), Contains("'▁the' has the score nan"));
  // an empty piece, or one starting with NUL (an empty key to the library's trie builder, which
  // throws through the library and ends the process): refused before the library sees them
  for (const auto& [text, message] : {std::pair{std::string(), "is empty"}, {std::string("\0@", 2), "holds a NUL byte"}}) {
    WireWriter piece_message, with_it;
    piece_message.bytes_field(1, text);
    piece_message.float_field(2, -1.f);
    with_it.bytes_field(1, piece_message.bytes());
    CHECK_THROWS_WITH(load_and_encode(model + with_it.bytes()), Contains(out) && Contains(message));
  }
  std::filesystem::remove(out);
}

