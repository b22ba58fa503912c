// Domain-adaptive pre-training: --init-from continues pre-training a checkpoint of each family on a
// new corpus (its weights and tokenizer, a fresh optimizer and schedule, exact resume), and
// --extend-vocab adds the new corpus's frequent split words as tokens whose rows start as the mean
// of their pieces' rows, every old id unchanged.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/core/checkpoint.hpp"
#include "models/core/registry.hpp"
#include "models/core/vocab_extension.hpp"
#include "nn/safetensors.hpp"
#include "tests/run_files.hpp"
#include "tests/temp_path.hpp"
#include "text/bert_tokenizer.hpp"
#include "text/domain_words.hpp"
#include "text/load_tokenizer.hpp"
#include "training/tasks/pretraining.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// A small "medical" corpus, far from the general text the base models train on: its frequent
// long words are split into many pieces by a vocabulary trained on pretrain_sample.txt.
std::string write_domain_corpus(const std::string& name) {
  const std::string path = temp_path(name);
  std::ofstream out(path);
  const char* sentences[] = {
      "The electrocardiogram showed atrial fibrillation and tachycardia.",
      "An echocardiogram confirmed the cardiomyopathy of the patient.",
      "Tachycardia and fibrillation were treated with amiodarone.",
      "The cardiologist ordered another electrocardiogram after the amiodarone dose.",
      "Cardiomyopathy may follow a long tachycardia.",
      "Her echocardiogram was normal, and the fibrillation stopped.",
  };
  for (int doc = 0; doc < 24; ++doc) {
    for (int s = 0; s < 4; ++s) out << sentences[(doc + s) % 6] << "\n";
    out << "\n";
  }
  return path;
}

// Small sequences and batches, no evaluation and one checkpoint at the end: a few steps in well under a second.
PretrainRun small_run(const std::string& corpus, const std::string& name) {
  PretrainRun r;
  r.task.corpus = corpus;
  r.task.seq_len = 32;
  r.task.eval_instances = 8;
  r.trainer.batch = 4;
  r.trainer.eval_every = 0;
  r.trainer.save_every = 0;
  r.trainer.quiet = true;
  r.trainer.out = temp_path(name);
  fs::remove_all(r.trainer.out);
  return r;
}

// The general text the base models train on: the first 500 lines of pretrain_sample.txt (9
// documents of Moby-Dick), enough for a vocabulary of 600 and quick to train SentencePiece on.
std::string write_general_corpus(const std::string& name) {
  std::ifstream in(std::string(XGRAD_TEST_DATA_DIR) + "/pretrain_sample.txt");
  const std::string path = temp_path(name);
  std::ofstream out(path);
  std::string line;
  for (int i = 0; i < 500 && std::getline(in, line); ++i) out << line << "\n";
  return path;
}

// A base checkpoint (removed with the corpus it wrote by remove_run).
PretrainRun base_run(const std::string& model, const std::string& name) {
  PretrainRun r = small_run(write_general_corpus(name + ".txt"), name);
  r.task.model = model;
  r.task.train_vocab = 600;
  r.trainer.steps = 2;
  return r;
}

// Continues `base`'s final checkpoint on the domain corpus; no --model, no tokenizer: the checkpoint's.
PretrainRun init_run(const PretrainRun& base, const std::string& corpus, const std::string& name) {
  PretrainRun r = small_run(corpus, name);
  r.task.init_from = base.trainer.out + "/checkpoint-000002";
  r.trainer.steps = 3;
  r.trainer.eval_every = 3;
  return r;
}

void remove_run(const PretrainRun& r) {
  fs::remove_all(r.trainer.out);
  if (r.task.init_from.empty()) fs::remove(r.task.corpus);  // a base run's own corpus
}

struct Family {
  const char* model;
  const char* architecture;  // the base run's head, which --init-from continues
  const char* task;          // training_state.json's
};
const Family kFamilies[] = {{"tiny", "BertForPreTraining", "mlm_nsp"},
                            {"roberta-tiny", "RobertaForMaskedLM", "mlm"},
                            {"albert-tiny", "AlbertForPreTraining", "mlm_sop"}};

}  // namespace

// Continues a 2-step base checkpoint of family `f` on the domain corpus: its weights unchanged
// at lr 0, its head, vocabulary and sentence task kept, a fresh step count; and it learns.
static void check_init_from(const Family& f) {
  const std::string corpus = write_domain_corpus(std::string("xgrad_dapt_corpus_") + f.model + ".txt");
  PretrainRun base = base_run(f.model, std::string("xgrad_dapt_base_") + f.model);
  REQUIRE(base.go() == 2);
  const fs::path from = base.trainer.out + "/checkpoint-000002";

  // lr 0: the run's weights are the checkpoint's, unchanged (the decay is scaled by lr too)
  PretrainRun frozen = init_run(base, corpus, std::string("xgrad_dapt_frozen_") + f.model);
  frozen.trainer.lr = 0;
  REQUIRE(frozen.go() == 3);
  const fs::path ckpt = fs::path(frozen.trainer.out) / "checkpoint-000003";
  CHECK(weight_difference((from / "model.safetensors").string(), (ckpt / "model.safetensors").string()) == 0);
  const auto config = read_json(ckpt / "config.json");
  CHECK(config["architectures"][0] == f.architecture);  // the sentence task of the checkpoint's heads goes on
  CHECK(config["vocab_size"] == 600);                   // the checkpoint's tokenizer, not a new one
  const auto state = read_json(ckpt / "training_state.json");
  CHECK(state["task"] == f.task);
  CHECK(state["step"] == 3);  // a fresh count, schedule and optimizer: not 2 + 3
  CHECK(state["options"]["init_from"] == from.string());
  CHECK(read_json(ckpt / "optimizer.json")["step"] == 3);
  bool evaluated = false;
  for (const auto& row : metrics_rows(frozen.trainer.out)) evaluated = evaluated || row.contains("eval_perplexity");
  CHECK(evaluated);

  // and it learns the new corpus
  PretrainRun learning = init_run(base, corpus, std::string("xgrad_dapt_learning_") + f.model);
  learning.trainer.lr = std::string(f.model) == "albert-tiny" ? 5e-2f : 5e-3f;
  learning.trainer.steps = 12;
  learning.trainer.log_every = 1;
  REQUIRE(learning.go() == 12);
  std::vector<double> losses;
  for (const auto& row : metrics_rows(learning.trainer.out))
    if (row.contains("mlm_loss")) losses.push_back(row["mlm_loss"]);
  REQUIRE(losses.size() == 12);
  CHECK(losses[9] + losses[10] + losses[11] < losses[0] + losses[1] + losses[2] - 1.0);  // 3-step means, 0.33 apart
  for (const auto* run : {&base, &frozen, &learning}) remove_run(*run);
  fs::remove(corpus);
}

TEST_CASE("init-from continues a BERT checkpoint on a new corpus with its tokenizer and a fresh optimizer", "[pretrain][dapt]") {
  check_init_from(kFamilies[0]);
}
TEST_CASE("init-from continues a RoBERTa checkpoint on a new corpus with its tokenizer and a fresh optimizer", "[pretrain][dapt]") {
  check_init_from(kFamilies[1]);
}
TEST_CASE("init-from continues an ALBERT checkpoint on a new corpus with its tokenizer and a fresh optimizer", "[pretrain][dapt]") {
  check_init_from(kFamilies[2]);
}

// Evaluating a checkpoint on documents it trained on would flatter it: on the corpus it trained
// on, --init-from keeps the documents it held out (here those of a run from before the split's
// options: the last 2%, at least one), unless the run sets its own; on other data the default.
TEST_CASE("init-from on its checkpoint's own corpus keeps the documents that run held out", "[pretrain][dapt]") {
  PretrainRun base = base_run("tiny", "xgrad_dapt_split_base");
  REQUIRE(base.go() == 2);
  const fs::path state_file = fs::path(base.trainer.out) / "checkpoint-000002" / "training_state.json";
  nlohmann::json state = read_json(state_file);
  REQUIRE(state["options"]["eval_documents_at"] == "spread");
  state["options"].erase("eval_min_documents");  // as a checkpoint written before them
  state["options"].erase("eval_documents_at");
  write_json(state_file, state);
  auto split_of = [](const PretrainRun& r) {
    const auto o = read_json(fs::path(r.trainer.out) / "checkpoint-000003" / "training_state.json")["options"];
    return std::pair{o["eval_min_documents"].get<size_t>(), o["eval_documents_at"].get<std::string>()};
  };
  using Split = std::pair<size_t, std::string>;

  PretrainRun same = init_run(base, base.task.corpus, "xgrad_dapt_split_same");
  REQUIRE(same.go() == 3);
  CHECK(split_of(same) == Split{1, "end"});
  PretrainRun chosen = init_run(base, base.task.corpus, "xgrad_dapt_split_chosen");
  chosen.task.eval_min_documents = 3;
  REQUIRE(chosen.go() == 3);
  CHECK(split_of(chosen) == Split{3, "spread"});
  const std::string domain = write_domain_corpus("xgrad_dapt_split_domain.txt");
  PretrainRun other = init_run(base, domain, "xgrad_dapt_split_other");
  REQUIRE(other.go() == 3);
  CHECK(split_of(other) == Split{2, "spread"});
  // a run that held nothing out: nothing to keep
  state["options"]["eval_instances"] = 0;
  write_json(state_file, state);
  PretrainRun none_held = init_run(base, base.task.corpus, "xgrad_dapt_split_none_held");
  REQUIRE(none_held.go() == 3);
  CHECK(split_of(none_held) == Split{2, "spread"});
  // which documents it held out cannot be read: refused, not evaluated on what it may have trained on
  std::ofstream(state_file) << "{\"options\": ";
  PretrainRun unreadable = init_run(base, base.task.corpus, "xgrad_dapt_split_unreadable");
  CHECK_THROWS_WITH(unreadable.go(), Contains("cannot read which documents its run held out") && Contains(base.trainer.out));
  for (const auto* run : {&same, &chosen, &other, &none_held, &unreadable, &base}) remove_run(*run);
  fs::remove(domain);
}

TEST_CASE("a checkpoint without the sentence head continues with MLM alone, or a new head when asked", "[pretrain][dapt]") {
  const std::string corpus = write_domain_corpus("xgrad_dapt_corpus_mlm.txt");
  PretrainRun base = base_run("tiny", "xgrad_dapt_base_mlm");
  base.task.pairing = "doc-sentences";  // BertForMaskedLM
  REQUIRE(base.go() == 2);
  PretrainRun mlm = init_run(base, corpus, "xgrad_dapt_mlm");
  mlm.trainer.eval_every = 0;
  REQUIRE(mlm.go() == 3);
  CHECK(read_json(fs::path(mlm.trainer.out) / "checkpoint-000003" / "config.json")["architectures"][0] == "BertForMaskedLM");
  PretrainRun nsp = init_run(base, corpus, "xgrad_dapt_nsp");
  nsp.task.pairing = "nsp";
  nsp.trainer.eval_every = 0;
  REQUIRE(nsp.go() == 3);
  CHECK(read_json(fs::path(nsp.trainer.out) / "checkpoint-000003" / "config.json")["architectures"][0] == "BertForPreTraining");
  for (const auto* run : {&base, &mlm, &nsp}) remove_run(*run);
  fs::remove(corpus);
}

TEST_CASE("an --init-from run with --extend-vocab stopped and resumed equals an uninterrupted one", "[pretrain][dapt]") {
  const std::string corpus = write_domain_corpus("xgrad_dapt_corpus_resume.txt");
  PretrainRun base = base_run("tiny", "xgrad_dapt_base_resume");
  REQUIRE(base.go() == 2);
  PretrainRun full = init_run(base, corpus, "xgrad_dapt_full");
  full.task.extend_vocab = 5;
  full.trainer.eval_every = 0;
  REQUIRE(full.go() == 3);
  PretrainRun part = init_run(base, corpus, "xgrad_dapt_part");
  part.task.extend_vocab = 5;
  part.trainer.eval_every = 0;
  part.trainer.stop_at = 1;
  REQUIRE(part.go() == 1);
  remove_run(base);  // a resumed run needs only its own checkpoint
  PretrainRun resumed;               // defaults: the checkpoint's saved options decide
  resumed.trainer.resume = resumed.trainer.out = part.trainer.out;
  resumed.trainer.quiet = true;
  resumed.trainer.eval_every = 0;
  REQUIRE(resumed.go() == 3);
  CHECK(weight_difference(full.trainer.out + "/checkpoint-000003/model.safetensors",
                          part.trainer.out + "/checkpoint-000003/model.safetensors") == 0);
  CHECK(read_json(fs::path(part.trainer.out) / "checkpoint-000003" / "config.json")["vocab_size"] == 605);
  for (const auto* run : {&full, &part}) remove_run(*run);
  fs::remove(corpus);
}

TEST_CASE("extend-vocab appends the domain's split words: old ids unchanged, new rows the mean of their pieces",
          "[pretrain][dapt]") {
  const std::string corpus = write_domain_corpus("xgrad_dapt_corpus_extend.txt");
  PretrainRun base = base_run("tiny", "xgrad_dapt_base_extend");
  REQUIRE(base.go() == 2);
  const fs::path from = fs::path(base.trainer.out) / "checkpoint-000002";
  const auto old_tok = text::load_tokenizer(from.string());
  REQUIRE(old_tok->tokenize("electrocardiogram").size() >= 2);

  PretrainRun r = init_run(base, corpus, "xgrad_dapt_extend");
  r.task.extend_vocab = 6;
  r.task.extend_min_count = 3;
  r.trainer.lr = 0;  // the checkpoint holds the extended model as it starts
  r.trainer.eval_every = 0;
  REQUIRE(r.go() == 3);
  const fs::path ckpt = fs::path(r.trainer.out) / "checkpoint-000003";
  const auto tok = text::load_tokenizer(ckpt.string());
  REQUIRE(tok->vocab_size() == 606);
  const auto config = read_json(ckpt / "config.json");
  CHECK(config["vocab_size"] == 606);  // transformers sizes the embeddings from it
  for (int32_t id = 0; id < 600; ++id) REQUIRE(tok->id_to_token(id) == old_tok->id_to_token(id));
  // the most frequent split words of the training documents, now one token each
  for (const char* word : {"electrocardiogram", "tachycardia", "fibrillation", "cardiomyopathy"}) {
    CAPTURE(word);
    const auto pieces = tok->tokenize(word);
    REQUIRE(pieces.size() == 1);
    CHECK(pieces[0].id >= 600);
  }
  CHECK(tok->tokenize("the electrocardiogram").size() == 2);

  const auto old_w = nn::safetensors::read_float_tensors((from / "model.safetensors").string());
  const auto new_w = nn::safetensors::read_float_tensors((ckpt / "model.safetensors").string());
  CHECK(new_w.size() == old_w.size());  // Hugging Face's names, the tied decoder stored once
  const size_t hidden = config["hidden_size"];
  for (const char* name : {"bert.embeddings.word_embeddings.weight", "cls.predictions.bias"}) {
    CAPTURE(name);
    const Tensor& a = old_w.at(name);
    const Tensor& b = new_w.at(name);
    const size_t row = a.numel() / 600;
    REQUIRE(b.shape()[0] == 606);
    CHECK(row == (std::string(name).find("bias") != std::string::npos ? 1 : hidden));
    for (size_t i = 0; i < a.numel(); ++i) REQUIRE(b.data()[i] == a.data()[i]);
    for (int32_t id = 600; id < 606; ++id) {
      const auto pieces = old_tok->tokenize(tok->id_to_token(id));
      REQUIRE(pieces.size() >= 2);
      for (size_t k = 0; k < row; ++k) {
        double mean = 0;
        for (const auto& p : pieces) mean += a.data()[size_t(p.id) * row + k];
        mean /= double(pieces.size());
        REQUIRE(b.data()[size_t(id) * row + k] == Approx(mean).margin(1e-6));
      }
    }
  }
  for (const auto& [name, t] : new_w)  // the other tensors are the checkpoint's
    if (name != "bert.embeddings.word_embeddings.weight" && name != "cls.predictions.bias") {
      CAPTURE(name);
      CHECK(t.to_vector() == old_w.at(name).to_vector());
    }

  // the checkpoint loads back at its new size (the layout transformers reads)
  const auto loaded = models::load_pretrained(ckpt.string());
  CHECK(loaded.model->config_json()["vocab_size"] == 606);
  CHECK(loaded.newly_initialised.empty());

  // --eval-only measures the extended model with the code training evaluates with
  r.trainer.lr = 2e-3f;
  const auto e = evaluate_pretraining(r.trainer, r.task);
  CHECK_THAT(e.data, Contains("vocabulary 606"));
  REQUIRE(!e.result.metrics.empty());
  CHECK(e.result.metrics[1].first == "perplexity");
  CHECK(e.result.metrics[1].second > 1);
  for (const auto* run : {&base, &r}) remove_run(*run);
  fs::remove(corpus);
}

TEST_CASE("frequent_split_words counts whole words of several pieces, most frequent first", "[dapt][tokenizer]") {
  const std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "heart", "electro",
                                         "##card", "##io", "##gram", "card", "##ia", "a", "."};
  const text::BertTokenizer tok{text::Vocab(vocab)};
  const std::vector<std::string> lines = {"the electrocardiogram .", "electrocardiogram cardia cardia heart",
                                          "the cardia electrocardio xyz electrocardio", "cardia"};
  text::Document doc;
  for (const auto& l : lines) {
    text::Sentence s;
    for (const auto& t : tok.tokenize(l)) s.push_back(t.id);
    doc.push_back(s);
  }
  const std::vector<text::Document> docs = {doc};
  auto words = text::frequent_split_words(docs, tok, {10, 2, 2});
  REQUIRE(words.size() == 3);
  CHECK(text::wordpiece_word(tok, words[0].pieces) == "cardia");  // 4 times
  CHECK(words[0].count == 4);
  // 2 each: a stable order among equal counts (by piece ids: electro ##card ##io < electro ##card ##io ##gram)
  CHECK(text::wordpiece_word(tok, words[1].pieces) == "electrocardio");
  CHECK(text::wordpiece_word(tok, words[2].pieces) == "electrocardiogram");
  CHECK(words[2].pieces.size() == 4);
  CHECK(text::frequent_split_words(docs, tok, {10, 3, 2}).size() == 1);  // min_count
  CHECK(text::frequent_split_words(docs, tok, {10, 2, 4}).size() == 1);  // min_pieces
  CHECK(text::frequent_split_words(docs, tok, {1, 2, 2}).size() == 1);   // max_words
  CHECK_THROWS_WITH(text::frequent_split_words(docs, tok, {10, 2, 1}), Contains("min_pieces 1"));
  CHECK_THROWS_WITH(text::wordpiece_word(tok, {tok.token_to_id("##io")}), Contains("'##io'"));
  text::BertTokenizer grown{text::Vocab(vocab)};
  grown.append_tokens({"electrocardiogram", "cardia"});
  CHECK(grown.vocab_size() == 17);
  CHECK(grown.token_to_id("electrocardiogram") == 15);
  for (int32_t id = 0; id < 15; ++id) CHECK(grown.id_to_token(id) == tok.id_to_token(id));
  const auto pieces = grown.tokenize("the electrocardiogram.");
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[1].id == 15);  // greedy longest match first finds the whole word
  CHECK_THROWS_WITH(grown.append_tokens({"heart"}), Contains("'heart'") && Contains("already"));
}

TEST_CASE("with_new_tokens grows every vocabulary-indexed tensor of each family and keeps ties", "[dapt][models]") {
  for (const auto& [family, architecture] : std::vector<std::pair<std::string, std::string>>{
           {"bert", "BertForPreTraining"}, {"roberta", "RobertaForMaskedLM"}, {"albert", "AlbertForPreTraining"}}) {
    CAPTURE(family);
    nlohmann::json config = models::preset_config(family, "tiny");
    config["model_type"] = family;
    config["vocab_size"] = 40;
    auto model = models::build_model(config, "test", architecture);
    Generator gen(7);
    model->init_weights(gen);
    const std::vector<std::vector<int32_t>> pieces = {{5, 6}, {7, 8, 9}};
    const auto grown = models::with_new_tokens(*model, pieces);
    CHECK(grown->architecture() == architecture);
    CHECK(grown->config_json()["vocab_size"] == 42);
    CHECK(grown->named_parameters().size() == model->named_parameters().size());  // a tied decoder stays tied
    const auto old_state = model->state_dict();
    size_t grown_tensors = 0;
    for (const auto& [name, t] : grown->state_dict()) {
      CAPTURE(name);
      const Tensor& a = old_state.at(name);
      if (t.shape() == a.shape()) {
        const auto va = a.to_vector(), vb = t.to_vector();
        CHECK(va == vb);
        continue;
      }
      ++grown_tensors;
      REQUIRE(t.shape()[0] == 42);
      const size_t row = a.numel() / 40;
      for (size_t i = 0; i < a.numel(); ++i) REQUIRE(t.data()[i] == a.data()[i]);
      for (size_t k = 0; k < row; ++k) {
        CHECK(t.data()[40 * row + k] == Approx((a.data()[5 * row + k] + a.data()[6 * row + k]) / 2).margin(1e-7));
        CHECK(t.data()[41 * row + k] ==
              Approx((a.data()[7 * row + k] + a.data()[8 * row + k] + a.data()[9 * row + k]) / 3).margin(1e-7));
      }
    }
    CHECK(grown_tensors >= 2);  // embeddings and the MLM bias (state_dict lists tied names too)
    CHECK_THROWS_WITH(models::with_new_tokens(*model, {{3, 40}}), Contains("piece id 40"));
    CHECK_THROWS_WITH(models::with_new_tokens(*model, {{}}), Contains("no pieces"));
  }
}

TEST_CASE("init-from and extend-vocab refuse what they cannot do, naming the flag", "[pretrain][dapt][errors]") {
  const std::string corpus = write_domain_corpus("xgrad_dapt_corpus_errors.txt");
  PretrainRun base = base_run("roberta-tiny", "xgrad_dapt_base_errors");
  REQUIRE(base.go() == 2);
  auto run = [&] { return init_run(base, corpus, "xgrad_dapt_errors"); };
  PretrainRun r = run();
  r.task.model = "tiny";
  CHECK_THROWS_WITH(r.go(), Contains("--model tiny conflicts") && Contains("model_type"));
  r = run();
  r.task.model = "roberta-small";
  CHECK_THROWS_WITH(r.go(), Contains("hidden_size"));
  r = run();
  r.task.model = "roberta-tiny";  // agrees with the checkpoint
  r.trainer.eval_every = 0;
  CHECK(r.go() == 3);
  r = run();
  r.task.tokenizer = "data/bert-base-uncased-vocab.txt";
  CHECK_THROWS_WITH(r.go(), Contains("--tokenizer with --init-from"));
  r = run();
  r.task.train_vocab = 100;
  CHECK_THROWS_WITH(r.go(), Contains("--train-vocab with --init-from"));
  r = run();
  r.task.extend_vocab = 4;
  CHECK_THROWS_WITH(r.go(), Contains("--extend-vocab supports WordPiece") && Contains("RobertaTokenizer"));
  r = run();
  r.task.seq_len = 4096;
  CHECK_THROWS_WITH(r.go(), Contains("--max-seq-length 4096 needs 4098 positions"));
  r = run();
  r.task.init_from = base.trainer.out + "/no-such-checkpoint";
  CHECK_THROWS_WITH(r.go(), Contains("not a checkpoint directory"));
  r = run();
  r.task.init_from.clear();
  r.task.extend_vocab = 4;
  CHECK_THROWS_WITH(r.go(), Contains("pass --init-from"));
  CHECK_THROWS_WITH(evaluate_pretraining(r.trainer, r.task), Contains("--eval-only"));
  for (const auto* run : {&base, &r}) remove_run(*run);
  fs::remove(corpus);
}
