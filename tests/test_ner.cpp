// NER end to end: a tiny BERT fine-tuned on data/ner_example_train.conll (--task ner) for a few
// seconds reaches a dev entity F1 far above the untrained model's; the best checkpoint is a
// BertForTokenClassification directory with the training file's labels as id2label; the
// predictions file is CoNLL (word gold predicted); bert_infer ner finds entities with their
// character spans in raw text (plain lines and JSONL) and refuses a model that is not a tagger.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/finetune_fixtures.hpp"
#include "tests/temp_path.hpp"
#include "training/tasks/ner.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
using test::kData;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

FinetuneOptions ner_options(const std::string& dir) {
  // seconds, the same result every run
  return test::tiny_finetune(dir, "ner", kData + "ner_example_train.conll", kData + "ner_example_dev.conll", 32);
}

// 4 epochs of the 400 training sentences (one window each), 16 a batch.
TrainerOptions quiet_trainer(const std::string& out) { return test::quiet_trainer(out, 4, 16, 5e-3f, 400); }
}  // namespace

TEST_CASE("NER: a tiny BERT fine-tuned on the example data tags entities", "[ner][finetune]") {
  const std::string dir = temp_path("xgrad_ner_e2e");
  fs::remove_all(dir);
  fs::create_directories(dir);
  FinetuneOptions o = ner_options(dir);
  NerKind& kind = dynamic_cast<NerKind&>(finetune_kind("conll2003"));  // the alias picks the same kind
  CHECK(&kind == &finetune_kind("ner"));

  // the untrained model's F1, with the weights the run starts from (same seed)
  double start = 0;
  {
    TaskContext ctx;
    ctx.out = dir + "/start";
    fs::create_directories(ctx.out);
    ctx.seed = TrainerOptions{}.seed;
    ctx.quiet = true;
    auto task = kind.make_task(o, ctx);
    NoGradGuard no_grad;
    task->model().eval();
    for (const auto& [name, value] : task->evaluate(32).metrics)
      if (name == "f1") start = value;
  }

  o.predictions = dir + "/predictions.conll";
  const nlohmann::json report = run_finetuning(quiet_trainer(dir + "/run"), o, kind).scores;
  const double f1 = report.at("dev").at("f1").get<double>();
  INFO("dev entity F1 " << f1 << ", untrained " << start);
  CHECK(f1 > start + 0.5);
  CHECK(f1 > 0.7);
  CHECK(report.at("dev").at("sentences") == 100);
  CHECK(report.at("dev").contains("f1_PER"));

  const std::string best = dir + "/run/best";
  const nlohmann::json config = nlohmann::json::parse(std::ifstream(best + "/config.json"));
  CHECK(config.at("architectures")[0] == "BertForTokenClassification");
  CHECK(config.at("id2label") == nlohmann::json({{"0", "O"}, {"1", "B-LOC"}, {"2", "I-LOC"}, {"3", "B-MISC"}, {"4", "B-ORG"},
                                                 {"5", "I-ORG"}, {"6", "B-PER"}, {"7", "I-PER"}}));
  // the predictions file: the dev words with their gold and predicted tags
  const std::string predictions = read_file(o.predictions);
  std::istringstream first_lines(predictions);
  std::string line;
  std::getline(first_lines, line);
  CHECK(line.rfind("Yuki B-PER ", 0) == 0);
  size_t rows = 0, blank = 0;
  for (std::istringstream all(predictions); std::getline(all, line);) (line.empty() ? blank : rows) += 1;
  CHECK(blank == 100);
  CHECK(rows == 932);  // the dev file's words

  // bert_infer ner on the best checkpoint: plain lines and JSONL, spans in code points
  const std::string in = dir + "/in.txt", out = dir + "/out.txt", err = dir + "/err.txt";
  auto infer = [&](const std::string& args, const std::string& input) {
    std::ofstream(in) << input;
    const int rc = std::system((std::string(XGRAD_BERT_INFER) + " ner --model " + best + " " + args + " < " + in + " > " + out +
                                " 2> " + err).c_str());
    return std::make_pair(rc, read_file(out) + read_file(err));
  };
  auto [rc, text] = infer("--batch 2", "John Smith visited Paris on Monday .\nNothing changed in the market today .\n"
                                       "Olga Ivanova told reporters in Tokyo that prices would fall .\n");
  REQUIRE(rc == 0);
  std::istringstream lines(text);
  std::vector<nlohmann::json> rows_out;
  for (std::string l; std::getline(lines, l);) rows_out.push_back(nlohmann::json::parse(l));
  REQUIRE(rows_out.size() == 3);
  CHECK(rows_out[1].at("entities").empty());
  const auto& smith = rows_out[0].at("entities");  // names the training data has (held-out ones are harder)
  REQUIRE(smith.size() == 2);
  CHECK(smith[0] == nlohmann::json({{"type", "PER"}, {"text", "John Smith"}, {"start", 0}, {"end", 10}, {"score", smith[0]["score"]}}));
  CHECK(smith[1] == nlohmann::json({{"type", "LOC"}, {"text", "Paris"}, {"start", 19}, {"end", 24}, {"score", smith[1]["score"]}}));
  CHECK(smith[0].at("score").get<double>() > 0.5);
  CHECK(rows_out[2].at("entities").size() == 2);  // Olga Ivanova, Tokyo
  std::tie(rc, text) = infer("--jsonl", "{\"text\": \"Émile arrived in Oslo for a two-day visit .\"}\n");
  REQUIRE(rc == 0);
  const auto oslo = nlohmann::json::parse(text).at("entities");
  REQUIRE(!oslo.empty());
  CHECK(oslo.back() == nlohmann::json({{"type", "LOC"}, {"text", "Oslo"}, {"start", 17}, {"end", 21}, {"score", oslo.back()["score"]}}));
  std::tie(rc, text) = infer("--jsonl", "{\"txt\": 1}\n");
  CHECK(rc != 0);
  CHECK_THAT(text, Contains("stdin line 1: expected an object with a string \"text\""));
  fs::remove_all(dir);
}

TEST_CASE("NER: data errors reach the user with the file and line", "[ner][finetune]") {
  const std::string dir = temp_path("xgrad_ner_errors");
  fs::remove_all(dir);
  fs::create_directories(dir);
  FinetuneOptions o = ner_options(dir);
  o.train = dir + "/bad.conll";
  std::ofstream(o.train) << "EU B-ORG\nrejects O\n\nGerman I-\n";
  NerKind& kind = dynamic_cast<NerKind&>(finetune_kind("ner"));
  TrainerOptions t = quiet_trainer(dir + "/run");
  CHECK_THROWS_WITH(run_finetuning(t, o, kind), Contains("bad.conll:4: field 2 (tag) 'I-': no entity type after the prefix"));
  std::ofstream(o.train) << "EU B-ORG\n";
  kind.settings().stride = 30;  // windows of 32 hold 30 sub-tokens
  CHECK_THROWS_WITH(run_finetuning(t, o, kind), Contains("[ner] stride 30 must be below the 30 sub-tokens a window holds"));
  kind.settings().stride = NerOptions{}.stride;  // the kind is shared by every test
  fs::remove_all(dir);
}
