// Pre-training RoBERTa and ALBERT through the same Task as BERT: each family's recipe (RoBERTa:
// MLM on packed full sentences, Adam beta2 0.98 / eps 1e-6, a byte-level BPE vocabulary; ALBERT:
// MLM + sentence order, a SentencePiece vocabulary), learning, exact resume, Hugging Face
// checkpoint files, and clear errors for combinations a family cannot train.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nn/safetensors.hpp"
#include "tests/run_files.hpp"
#include "tests/temp_path.hpp"
#include "text/load_tokenizer.hpp"
#include "training/tasks/pretraining.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
using Run = PretrainRun;

Run family_run(const std::string& model, const std::string& out) { return small_pretrain_run(model, temp_path(out), 30); }

struct Family {
  const char* model;
  const char* task;           // training_state.json's task
  const char* architecture;   // config.json's
  const char* sentence_part;  // the sentence task's loss in metrics, or ""
  std::vector<const char*> tokenizer_files;
  float lr;                   // LAMB's trust ratio makes its steps small on a tiny model: a larger rate
};
const Family kFamilies[] = {
    {"roberta-tiny", "mlm", "RobertaForMaskedLM", "", {"vocab.json", "merges.txt", "tokenizer_config.json"}, 2e-3f},
    {"albert-tiny", "mlm_sop", "AlbertForPreTraining", "sop_loss", {"spiece.model", "tokenizer_config.json"}, 5e-2f},
};
}  // namespace

TEST_CASE("RoBERTa and ALBERT pre-train with their own recipes: the loss falls, checkpoints are Hugging Face's", "[pretrain][families]") {
  for (const Family& f : kFamilies) {
    CAPTURE(f.model);
    Run r = family_run(f.model, std::string("xgrad_pretrain_family_") + f.model);
    r.trainer.lr = f.lr;
    REQUIRE(r.go() == 30);
    std::vector<double> losses;
    bool evaluated = false;
    for (const auto& row : metrics_rows(r.trainer.out)) {
      if (row.contains("loss")) {
        losses.push_back(row["loss"]);
        CHECK(row.contains("mlm_loss"));
        CHECK(!row.contains("nsp_loss"));
        if (*f.sentence_part) {
          CHECK(row["loss"].get<double>() == Approx(row["mlm_loss"].get<double>() + row[f.sentence_part].get<double>()));
        } else {
          CHECK(row["loss"].get<double>() == Approx(row["mlm_loss"].get<double>()));
        }
      }
      if (row.contains("eval_perplexity")) evaluated = true;
    }
    REQUIRE(losses.size() == 30);
    CHECK(losses.front() > 6.0);                    // ~ln(600) at the start
    CHECK(losses.back() < losses.front() - 0.5);    // and learning
    CHECK(evaluated);
    const fs::path ckpt = fs::path(r.trainer.out) / "checkpoint-000030";
    const auto config = read_json(ckpt / "config.json");
    CHECK(config["architectures"][0] == f.architecture);
    CHECK(config["vocab_size"] == 600);
    for (const char* file : f.tokenizer_files) CHECK(fs::exists(ckpt / file));
    const auto tok = text::load_tokenizer(ckpt.string());
    CHECK(config["pad_token_id"] == tok->pad_id());
    CHECK(read_json(ckpt / "training_state.json")["task"] == f.task);
    const auto optimizer = read_json(ckpt / "optimizer.json");
    const auto settings = optimizer["settings"];
    if (std::string(f.model).rfind("roberta", 0) == 0) {
      CHECK(optimizer["optimizer"] == "adamw");
      CHECK(settings["beta2"].get<float>() == 0.98f);  // RoBERTa's recipe
      CHECK(settings["eps"].get<float>() == 1e-6f);
      CHECK(config["max_position_embeddings"].get<size_t>() >= 48 + 2);  // positions start after <pad> (1)
    } else {
      CHECK(optimizer["optimizer"] == "lamb");  // ALBERT's recipe
      CHECK(settings["beta2"].get<float>() == 0.999f);
    }
    fs::remove_all(r.trainer.out);
  }
}

TEST_CASE("RoBERTa and ALBERT runs stopped and resumed equal uninterrupted ones", "[pretrain][families]") {
  for (const Family& f : kFamilies) {
    CAPTURE(f.model);
    Run full = family_run(f.model, std::string("xgrad_pretrain_family_full_") + f.model);
    full.trainer.steps = 6;
    full.trainer.eval_every = 0;
    full.go();
    Run part = family_run(f.model, std::string("xgrad_pretrain_family_part_") + f.model);
    part.trainer.steps = 6;
    part.trainer.eval_every = 0;
    part.trainer.stop_at = 2;
    REQUIRE(part.go() == 2);
    Run resumed;  // defaults everywhere: the checkpoint decides (model, vocabulary, pairing)
    resumed.trainer.out = resumed.trainer.resume = part.trainer.out;
    resumed.trainer.quiet = true;
    resumed.trainer.eval_every = 0;
    REQUIRE(resumed.go() == 6);
    CHECK(weight_difference(full.trainer.out + "/checkpoint-000006/model.safetensors",
                            part.trainer.out + "/checkpoint-000006/model.safetensors") == 0);
    fs::remove_all(full.trainer.out);
    fs::remove_all(part.trainer.out);
  }
}

TEST_CASE("BERT and ALBERT train MLM alone on packed sequences with --pairing", "[pretrain][families]") {
  for (const char* model : {"tiny", "albert-tiny"}) {
    CAPTURE(model);
    Run r = family_run(model, std::string("xgrad_pretrain_mlm_only_") + model);
    r.task.pairing = "doc-sentences";
    if (std::string(model) == "albert-tiny") r.trainer.lr = 5e-2f;  // LAMB's rate, as kFamilies
    r.trainer.steps = 20;
    r.trainer.eval_every = 0;
    REQUIRE(r.go() == 20);
    const auto config = read_json(fs::path(r.trainer.out) / "checkpoint-000020" / "config.json");
    CHECK(config["architectures"][0] == (std::string(model) == "tiny" ? "BertForMaskedLM" : "AlbertForMaskedLM"));
    // MLM alone: no sentence loss logged, the loss is the MLM loss, and it falls
    std::vector<double> losses;
    for (const auto& row : metrics_rows(r.trainer.out)) {
      if (!row.contains("loss")) continue;
      CHECK(!row.contains("nsp_loss"));
      CHECK(!row.contains("sop_loss"));
      CHECK(row["loss"].get<double>() == Approx(row["mlm_loss"].get<double>()));
      losses.push_back(row["loss"]);
    }
    REQUIRE(losses.size() == 20);
    const double first = (losses[0] + losses[1] + losses[2]) / 3, last = (losses[17] + losses[18] + losses[19]) / 3;
    CHECK(last < first - 0.3);  // 6.4 -> 6.0 (tiny) and 5.7 (albert-tiny) here
    fs::remove_all(r.trainer.out);
  }
}

TEST_CASE("pre-training refuses what a family cannot train, with clear errors", "[pretrain][families][errors]") {
  Run r = family_run("roberta-tiny", "xgrad_pretrain_family_bad");
  r.task.pairing = "nsp";
  CHECK_THROWS_WITH(r.go(), Contains("--pairing nsp") && Contains("'roberta'") && Contains("RobertaForMaskedLM"));
  r = family_run("roberta-tiny", "xgrad_pretrain_family_bad");
  r.task.pairing = "sentence-order";
  CHECK_THROWS_WITH(r.go(), Contains("'sentence-order'"));
  // GPT-2's files put <pad> at 50260: RoBERTa's positions would start after it
  r = family_run("roberta-tiny", "xgrad_pretrain_family_bad");
  r.task.train_vocab = 0;
  r.task.tokenizer = std::string(XGRAD_TEST_DATA_DIR) + "/../../data/gpt2-vocab.json";
  CHECK_THROWS_WITH(r.go(), Contains("pad token has id 50260") && Contains("--train-vocab"));
  // a vocabulary is trained from text, not from shards (which were made with one)
  r = family_run("roberta-tiny", "xgrad_pretrain_family_bad");
  r.task.corpus = XGRAD_TEST_DATA_DIR;
  CHECK_THROWS_WITH(r.go(), Contains("is a shard directory") && Contains("--tokenizer"));
  r = family_run("xlnet-tiny", "xgrad_pretrain_family_bad");  // not a family: a BERT size
  CHECK_THROWS_WITH(r.go(), Contains("'xlnet-tiny'"));
  r = family_run("electra-tiny", "xgrad_pretrain_family_bad");  // replaced-token detection has no sentence task
  r.task.pairing = "nsp";
  CHECK_THROWS_WITH(r.go(), Contains("--pairing nsp") && Contains("'electra'") && Contains("ElectraForPreTraining (none)"));
  r = family_run("albert-gigantic", "xgrad_pretrain_family_bad");
  CHECK_THROWS_WITH(r.go(), Contains("'gigantic'"));
  fs::remove_all(r.trainer.out);
}
