// WordPiece vocabulary training: deterministic, the requested size, every character covered,
// frequent words whole.
#include <catch2/catch.hpp>
#include <fstream>

#include "text/wordpiece_trainer.hpp"

using namespace xg::text;
using Catch::Matchers::Contains;

TEST_CASE("a trained vocabulary covers the corpus and keeps frequent words whole", "[tokenizer][trainer]") {
  const std::string corpus = std::string(XGRAD_TEST_DATA_DIR) + "/tokenizer_corpus.txt";
  WordPieceTrainerOptions opt;
  opt.vocab_size = 3000;
  const Vocab v = train_wordpiece({corpus}, opt);
  CHECK(v.size() == 3000);
  CHECK(v.token(0) == "[PAD]");
  CHECK(v.token(4) == "[MASK]");
  for (const char* w : {"the", "and", "of", "to", "whale", "congress", "ship", "government"}) {
    INFO(w);
    CHECK(v.id(w) >= 0);
  }
  CHECK(v.id("##s") >= 0);
  // every line tokenises without [UNK] (the corpus alphabet is under the 1000-character limit)
  const BertTokenizer tok(v);
  std::ifstream in(corpus);
  size_t unk = 0, lines = 0;
  for (std::string l; std::getline(in, l) && lines < 500; ++lines)
    for (const auto& t : tok.tokenize(l)) unk += t.id == tok.unk_id();
  CHECK(unk == 0);
  // deterministic
  const Vocab again = train_wordpiece({corpus}, opt);
  for (size_t i = 0; i < v.size(); ++i) REQUIRE(again.token(int32_t(i)) == v.token(int32_t(i)));
}

TEST_CASE("trainer merges follow pair frequency", "[tokenizer][trainer]") {
  WordPieceTrainerOptions opt;
  opt.vocab_size = 5 + 4 + 3 + 2;  // specials, alphabet a b c d, their ## forms, then merges
  opt.min_frequency = 1;
  const Vocab v = train_wordpiece_lines({"ab ab ab ab cd cd ab"}, opt);
  // "a" + "##b" is the most frequent pair (5), then "c" + "##d" (2)
  CHECK(v.id("ab") >= 0);
  CHECK(v.id("cd") >= 0);
  CHECK(v.id("ab") < v.id("cd"));
  CHECK_THROWS_WITH(train_wordpiece_lines({"   "}, opt), Contains("no words"));
  opt.vocab_size = 3;
  CHECK_THROWS_WITH(train_wordpiece_lines({"x"}, opt), Contains("vocab_size 3"));
}

TEST_CASE("trainer: characters outside the alphabet are left out of words, never merged", "[tokenizer][trainer]") {
  // limit_alphabet 2 keeps a and b; x goes, so "axb" trains as a ##b (Hugging Face's trainer
  // skips such characters), not as a [UNK] ##b whose merges would be "a[UNK]".
  WordPieceTrainerOptions opt;
  opt.vocab_size = 5 + 2 + 1 + 1;  // specials, a b, ##b, one merge
  opt.min_frequency = 1;
  opt.limit_alphabet = 2;
  const Vocab v = train_wordpiece_lines({"axb axb axb axb yy"}, opt);
  CHECK(v.id("ab") >= 0);
  for (size_t i = 0; i < v.size(); ++i) {
    INFO(v.token(int32_t(i)));
    CHECK((v.token(int32_t(i)) == "[UNK]" || v.token(int32_t(i)).find("[UNK]") == std::string::npos));
  }
}
