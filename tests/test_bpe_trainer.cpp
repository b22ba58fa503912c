// Byte-level BPE training against Hugging Face's BpeTrainer (tests/data/bpe_trainer/*, from
// tools/gen_bpe_trainer_goldens.py on tests/data/bpe_train_corpus.txt): the same vocab.json and
// merges.txt, byte for byte, with special tokens or none, a prefix space, a minimum frequency.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/temp_path.hpp"
#include "text/bpe_trainer.hpp"
#include "text/roberta_tokenizer.hpp"

using namespace xg::text;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
const std::string kData = XGRAD_TEST_DATA_DIR;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

BpeModel train(const BpeTrainerOptions& o) {
  BpeTrainer t(o);
  t.feed_file(kData + "/bpe_train_corpus.txt");
  return t.train();
}
}  // namespace

TEST_CASE("BPE training gives Hugging Face's vocab.json and merges.txt", "[bpe][trainer][parity]") {
  struct Setting {
    const char* name;
    BpeTrainerOptions opt;
  };
  const std::vector<Setting> settings = {
      {"roberta", {800, 2, {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}, false}},
      {"prefix_space", {600, 0, {}, true}},
      {"min_frequency", {5000, 8, {"<pad>"}, false}},
  };
  for (const auto& s : settings) {
    INFO(s.name);
    const std::string dir = temp_path(std::string("xgrad_bpe_train_") + s.name);
    const BpeModel model = train(s.opt);
    model.save(dir);
    const std::string golden = kData + "/bpe_trainer/" + s.name;
    CHECK(read(dir + "/merges.txt") == read(golden + "/merges.txt"));
    CHECK(read(dir + "/vocab.json") == read(golden + "/vocab.json"));
    fs::remove_all(dir);
  }
}

TEST_CASE("a trained BPE vocabulary tokenizes and decodes back", "[bpe][trainer]") {
  BpeTrainerOptions o;
  o.vocab_size = 500;
  const RobertaTokenizer tok(train(o));
  CHECK(tok.vocab_size() == 500);
  CHECK(tok.token_to_id("<s>") == 0);
  CHECK(tok.token_to_id("<mask>") == 4);
  CHECK(tok.token_to_id("!") == 5);  // the alphabet follows the special tokens, in code-point order
  const std::string text = "Call me Ishmael. \t 😀 naïve <mask>";
  const Encoding e = tok.encode(text);
  CHECK(e.ids.front() == 0);
  CHECK(e.ids[e.size() - 2] == 4);
  CHECK(tok.decode(e.ids, false) == "<s>Call me Ishmael. \t 😀 naïve<mask></s>");
  CHECK(tok.decode(tok.encode("Call me Ishmael. \t 😀 naïve").ids) == "Call me Ishmael. \t 😀 naïve");
}

TEST_CASE("BPE training: small vocabularies, empty input, errors", "[bpe][trainer][errors]") {
  BpeTrainerOptions o;
  o.vocab_size = 10;  // below the alphabet: the alphabet is kept whole, no merges
  const BpeModel m = train(o);
  CHECK(m.vocab().size() == 5 + 256);
  CHECK(m.merges().empty());
  BpeTrainer empty(o);
  CHECK(empty.train().merges().empty());
  BpeTrainer t(o);
  CHECK_THROWS_WITH(t.feed("ok \xC3", "corpus.txt:7"), Contains("corpus.txt:7"));
  CHECK_THROWS_WITH(t.feed_file("/nonexistent/corpus.txt"), Contains("/nonexistent/corpus.txt") && Contains("cannot open"));
}
