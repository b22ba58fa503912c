// Vocabularies trained for a pre-training run (training/tasks/vocabulary.hpp): the held-out
// documents stay unseen by the WordPiece, byte-level BPE and SentencePiece trainers alike.
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>

#include "tests/run_files.hpp"
#include "tests/temp_path.hpp"
#include "text/pretraining_data.hpp"
#include "training/tasks/vocabulary.hpp"

using namespace xg;
using namespace xg::training;
namespace fs = std::filesystem;

namespace {
// Three documents: 600 lines of the bundled corpus, then one whose words are nowhere else ("zorblax"
// 300 times, a snowman), then 600 more lines of the corpus.
std::string corpus_with_a_rare_document(const std::string& path) {
  std::ifstream in(std::string(XGRAD_TEST_DATA_DIR) + "/../../data/pretrain_corpus_small.txt");
  std::ofstream o(path);
  auto copy_lines = [&](int n) {
    std::string line;
    for (int i = 0; i < n && std::getline(in, line);)
      if (!line.empty()) o << line << '\n', ++i;
  };
  copy_lines(600);
  o << "\n";
  for (int i = 0; i < 30; ++i) o << "zorblax zorblax zorblax zorblax zorblax zorblax zorblax zorblax zorblax zorblax \u2603\n";
  o << "\n";
  copy_lines(600);
  return path;
}
}  // namespace

TEST_CASE("trained vocabularies leave the held-out documents out: WordPiece, BPE, SentencePiece", "[tokenizer][trainer][pretrain]") {
  const std::string corpus = corpus_with_a_rare_document(temp_path("xgrad_vocab_held_out.txt"));
  REQUIRE(text::text_document_lines(corpus).size() == 3);
  for (const std::string family : {"bert", "roberta", "albert"}) {
    for (const bool hold_out : {false, true}) {
      INFO(family << (hold_out ? ", the rare document held out" : ", every document"));
      const std::string out = temp_path("xgrad_vocab_" + family + (hold_out ? "_held" : "_all"));
      fs::remove_all(out);
      fs::create_directories(out);
      VocabularyRequest r{family, "", 600, corpus, out, false, true, nullptr};
      if (hold_out) r.held_out = [](size_t documents) { return documents == 3 ? std::vector<size_t>{1} : std::vector<size_t>{}; };
      const auto tok = make_vocabulary(r);
      if (family == "albert") {  // every character seen is a piece (character_coverage 1.0)
        bool unknown = false;
        for (const auto& t : tok->tokenize("\u2603")) unknown = unknown || t.id == tok->unk_id();
        CHECK(unknown == hold_out);
      } else {  // a word 300 times in its document is one token
        CHECK((tok->token_to_id(family == "bert" ? "zorblax" : "\u0120zorblax") < 0) == hold_out);
      }
      fs::remove_all(out);
    }
  }
  fs::remove(corpus);
}

TEST_CASE("bert_pretrain's trained vocabulary has not seen the documents its evaluation holds out", "[pretrain][trainer]") {
  const std::string corpus = corpus_with_a_rare_document(temp_path("xgrad_vocab_run_corpus.txt"));
  for (const size_t eval_instances : {size_t(0), size_t(16)}) {
    INFO("eval_instances " << eval_instances);
    PretrainRun r;
    r.task.corpus = corpus;
    r.task.train_vocab = 600;
    r.task.seq_len = 32;
    r.task.eval_instances = eval_instances;
    r.task.eval_min_documents = 1;  // of 3 spread documents: the middle one, the rare one
    r.trainer.batch = 2;
    r.trainer.steps = 1;
    r.trainer.save_every = 0;
    r.trainer.quiet = true;
    r.trainer.out = temp_path("xgrad_vocab_run");
    fs::remove_all(r.trainer.out);
    REQUIRE(r.go() == 1);
    std::ifstream in(fs::path(r.trainer.out) / "vocab.txt");
    bool has_word = false;
    for (std::string token; std::getline(in, token);) has_word = has_word || token == "zorblax";
    CHECK(has_word == (eval_instances == 0));
    fs::remove_all(r.trainer.out);
  }
  fs::remove(corpus);
}

TEST_CASE("a vocabulary is not trained from a pipe, which training could not read again", "[tokenizer][trainer][errors]") {
  const std::string fifo = temp_path("xgrad_vocab_fifo");
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string out = temp_path("xgrad_vocab_fifo_out");
  fs::create_directories(out);
  VocabularyRequest r{"bert", "", 600, fifo, out, false, true, nullptr};
  CHECK_THROWS_WITH(make_vocabulary(r), Catch::Matchers::Contains(fifo) && Catch::Matchers::Contains("not a regular file"));
  fs::remove(fifo);
  fs::remove_all(out);
}
