// Extractive QA end to end on data/qa_example_{train,dev}.json: a one-layer BERT fine-tuned for
// SQuAD v2.0 in a few seconds (the loss falls, the training questions are learnt, the dev set is
// scored by the official metrics and its predictions written in the official format), then
// answered by bert_infer qa; SQuAD v1.1 on the answerable questions; v1.1 refuses unanswerable ones.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "metrics/squad_metrics.hpp"
#include "tests/finetune_fixtures.hpp"
#include "tests/temp_path.hpp"
#include "text/squad_data.hpp"
#include "training/checkpoints.hpp"
#include "training/tasks/question_answering.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
using test::kData;

TrainerOptions quiet_trainer(const std::string& out, size_t epochs) {
  TrainerOptions t = test::quiet_trainer(out, epochs, 16, 3e-3f, 0);
  t.log_every = 5;
  t.eval_every = 25;
  return t;
}

FinetuneOptions qa_options(const std::string& dir, const std::string& task) {
  // windows of 64 tokens: most contexts need two; seconds, the same every run
  return test::tiny_finetune(dir, task, kData + "qa_example_train.json", kData + "qa_example_dev.json", 64, 64);
}

// The training loss of each logged step, from the run's metrics.jsonl.
std::vector<double> logged_losses(const std::string& run) {
  std::vector<double> out;
  std::ifstream in(run + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) out.push_back(j["loss"].get<double>());
  }
  return out;
}

std::vector<metrics::squad::GoldAnswers> gold_of(const std::vector<text::SquadQuestion>& questions) {
  std::vector<metrics::squad::GoldAnswers> gold;
  for (const auto& q : questions) {
    gold.push_back({q.id, {}});
    for (const auto& a : q.answers) gold.back().answers.push_back(a.text);
  }
  return gold;
}
}  // namespace

TEST_CASE("squad_v2 fine-tuning: the loss falls, dev is scored and predicted, bert_infer qa answers", "[squad][finetune]") {
  const std::string dir = temp_path("xgrad_squad_finetune");
  fs::create_directories(dir);
  FinetuneOptions o = qa_options(dir, "squad_v2");
  o.predictions = dir + "/predictions.json";
  QuestionAnsweringKind kind;
  const nlohmann::json report = run_finetuning(quiet_trainer(dir + "/run", 40), o, kind).scores;

  const auto losses = logged_losses(dir + "/run");
  REQUIRE(losses.size() >= 4);
  INFO("first logged loss " << losses.front() << ", last " << losses.back());
  CHECK(losses.back() < 0.5 * losses.front());

  // the dev scores are the official script's on the predictions written
  const nlohmann::json& dev = report.at("dev");
  CHECK(dev.at("questions") == 9);
  CHECK(dev.at("total") == 9);
  CHECK(dev.at("HasAns_total") == 7);
  CHECK(dev.at("NoAns_total") == 2);
  const auto questions = text::read_squad(o.dev);
  const auto predicted = nlohmann::json::parse(std::ifstream(o.predictions)).get<metrics::squad::Predictions>();
  const auto odds = nlohmann::json::parse(std::ifstream(dir + "/predictions_null_odds.json")).get<std::map<std::string, double>>();
  REQUIRE(predicted.size() == 9);
  REQUIRE(odds.size() == 9);
  // (the answers as written: no cut on the null odds, which only the best_* search uses)
  for (const auto& [name, value] : metrics::squad::evaluate_v2(gold_of(questions), predicted, odds, INFINITY))
    CHECK(dev.at(name).get<double>() == Approx(value));
  for (const auto& [id, answer] : predicted)  // each answer is a span of its context, or ""
    for (const auto& q : questions)
      if (q.id == id) CHECK(q.context->find(answer) != std::string::npos);

  // the training questions are learnt by the last step (OUT/best is the best on dev, maybe earlier):
  // the windows, answer positions and decoding agree
  const nlohmann::json train = kind.score_file(list_checkpoints(dir + "/run").back(), o.train, o, 32, "");
  INFO("train F1 " << train.at("f1") << ", dev F1 " << dev.at("f1"));
  CHECK(train.at("f1").get<double>() > 60);
  CHECK(train.at("questions") == 39);

  // bert_infer qa on the best checkpoint: JSON lines in, answers with their spans out
  std::ofstream(dir + "/ask.jsonl") << R"({"question": "How long is the crossing?", "context": "The ferry leaves at seven. The crossing takes fifty minutes."})"
                                    << "\n\n" << R"({"id": "q2", "question": "Which café?", "context": "Café Bleu opened in 1999, next to the bakery."})" << "\n";
  const std::string command = fmt::format("{} qa --model {}/run/best --input {}/ask.jsonl --version-2 > {}/answers.jsonl", XGRAD_BERT_INFER, dir, dir, dir);
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream answers(dir + "/answers.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(answers, line);) lines.push_back(nlohmann::json::parse(line));
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].at("id") == "line 1");
  CHECK(lines[1].at("id") == "q2");
  const std::vector<std::string> contexts = {"The ferry leaves at seven. The crossing takes fifty minutes.", "Café Bleu opened in 1999, next to the bakery."};
  for (size_t i = 0; i < 2; ++i) {
    const auto& a = lines[i];
    CHECK(text::code_point_slice(contexts[i], a.at("start"), a.at("end")) == a.at("answer").get<std::string>());
    CHECK(a.contains("score"));
    CHECK(a.contains("null_odds"));
    CHECK(a.at("probability").get<double>() > 0);
  }
  const std::string bad = fmt::format("echo '{{\"question\": 3}}' | {} qa --model {}/run/best 2> {}/err.txt", XGRAD_BERT_INFER, dir, dir);
  CHECK(std::system(bad.c_str()) != 0);
  std::string err;
  std::getline(std::ifstream(dir + "/err.txt"), err);
  CHECK_THAT(err, Contains("bert_infer: stdin line 1: 'question' must be a string, got 3"));

  {  // the finished run resumed with no --task (bert_finetune --resume RUN): still squad_v2, scored again
    training::TrainerOptions again;
    again.quiet = true;
    again.resume = dir + "/run";
    QuestionAnsweringKind fresh;
    const nlohmann::json rescored = run_finetuning(again, FinetuneOptions{}, fresh).scores;
    CHECK(rescored.at("dev").at("f1") == dev.at("f1"));
    CHECK(rescored.at("dev").at("NoAns_total") == 2);
  }
  fs::remove_all(dir);
}

TEST_CASE("squad (v1.1) fine-tuning scores exact match and F1, and refuses unanswerable questions", "[squad][finetune]") {
  const std::string dir = temp_path("xgrad_squad_v1");
  fs::create_directories(dir);
  FinetuneOptions o = qa_options(dir, "squad");
  QuestionAnsweringKind kind;
  CHECK_THROWS_WITH(run_finetuning(quiet_trainer(dir + "/run", 1), o, kind),
                    Contains("question 'train-006' is unanswerable, which SQuAD v1.1 has not: use --task squad_v2"));
  // the answerable questions alone, as a v1.1 file
  for (std::string* path : {&o.train, &o.dev}) {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(*path));
    for (auto& article : j["data"])
      for (auto& p : article["paragraphs"]) {
        nlohmann::json kept = nlohmann::json::array();
        for (auto& q : p["qas"])
          if (!q["is_impossible"].get<bool>()) kept.push_back(q);
        p["qas"] = kept;
      }
    *path = dir + "/" + fs::path(*path).filename().string();
    std::ofstream(*path) << j.dump();
  }
  o.test = o.dev;
  const nlohmann::json report = run_finetuning(quiet_trainer(dir + "/run", 2), o, kind).scores;
  for (const char* set : {"dev", "test"}) {
    CHECK(report.at(set).at("questions") == 7);
    CHECK(report.at(set).contains("exact_match"));
    CHECK(report.at(set).at("f1").get<double>() >= 0);
  }
  fs::remove_all(dir);
}
