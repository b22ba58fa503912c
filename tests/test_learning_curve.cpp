// bert_finetune --learning-curve on a tiny model and 50 lines of data/sentiment_uci.tsv: a row
// per size and seed, the sizes trained on, a seed's score reproduced, the summary's mean and
// sample std, sizes above the set clamped, a stopped curve continued, bad lists refused; and the
// warnings about fine-tuning settings outside the usual ranges.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/finetune_fixtures.hpp"
#include "tests/temp_path.hpp"
#include "training/tasks/classification.hpp"
#include "training/tasks/learning_curve.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

struct CurveFixture {
  std::string dir = temp_path("xgrad_curve");
  FinetuneOptions task;
  TrainerOptions trainer;
  ClassificationKind kind;

  CurveFixture() {
    fs::create_directories(dir);
    task.train = test::write_split(dir + "/train.tsv", 60, 0);  // 50 lines
    task.dev = test::write_split(dir + "/dev.tsv", 60, 30);     // 50 other lines
    task.vocab = test::kVocab;
    task.max_len = 32;
    task.model = test::write_tiny_model(dir + "/model.json", 16);  // one small layer, no dropout: the same result every run
    trainer.quiet = true;
    trainer.overwrite = true;
    trainer.epochs = 1;
    trainer.min_steps = 4;  // 10 examples in batches of 8 are 2 steps: lengthened to 4
    trainer.batch = 8;
    trainer.lr = 3e-3f;
    trainer.warmup_ratio = 0.1f;
    trainer.save_every = 0;
    trainer.eval_every = -1;
  }
  ~CurveFixture() { fs::remove_all(dir); }

  LearningCurve run(const std::string& out, std::vector<size_t> sizes, size_t seeds) {
    trainer.out = dir + "/" + out;
    return run_learning_curve(trainer, task, kind, {std::move(sizes), seeds, false});
  }
};

// The last step of a run and its evaluations, from its metrics.jsonl.
std::pair<int64_t, int64_t> steps_and_evaluations(const std::string& run) {
  std::pair<int64_t, int64_t> r{0, 0};
  for (const auto& line : lines_of(run + "/metrics.jsonl")) {
    const auto row = nlohmann::json::parse(line);
    r.first = std::max(r.first, row.at("step").get<int64_t>());
    r.second += row.contains("eval_accuracy");
  }
  return r;
}

CurveRun run_with(size_t examples, uint64_t seed, double accuracy, double f1) {
  nlohmann::json dev = {{"accuracy", accuracy}, {"f1", f1}, {"examples", 50}};
  return {examples, seed, nlohmann::json{{"dev", dev}}};
}
}  // namespace

TEST_CASE("a learning curve runs each size with each seed and writes its rows and summary", "[curve]") {
  CurveFixture f;
  const LearningCurve curve = f.run("out", {20, 10}, 2);
  REQUIRE(curve.runs.size() == 4);
  // smallest size first, each seed from --seed up; the samples hold exactly the sizes asked for
  CHECK(curve.runs[0].examples == 10);
  CHECK(curve.runs[1].examples == 10);
  CHECK(curve.runs[2].examples == 20);
  CHECK(curve.runs[0].seed == 42);
  CHECK(curve.runs[1].seed == 43);
  CHECK(curve.runs[3].seed == 43);
  CHECK(curve.metrics == std::vector<std::string>{"accuracy", "f1", "mcc"});  // the dev examples count is no metric
  for (const auto& r : curve.runs) CHECK(r.scores.at("dev").at("examples") == 50);

  const auto rows = lines_of(f.dir + "/out/learning_curve.csv");
  REQUIRE(rows.size() == 5);
  CHECK(rows[0] == "examples,seed,dev_accuracy,dev_f1,dev_mcc");
  CHECK(rows[1].rfind("10,42,", 0) == 0);
  CHECK(rows[4].rfind("20,43,", 0) == 0);
  const auto summary = lines_of(f.dir + "/out/learning_curve_summary.csv");
  REQUIRE(summary.size() == 3);
  CHECK(summary[0] == "examples,runs,dev_accuracy_mean,dev_accuracy_std,dev_f1_mean,dev_f1_std,dev_mcc_mean,dev_mcc_std");
  CHECK(summary[1].rfind("10,2,", 0) == 0);
  const auto points = curve.summary();
  REQUIRE(points.size() == 2);
  const double a = curve.runs[2].scores["dev"]["accuracy"], b = curve.runs[3].scores["dev"]["accuracy"];
  CHECK(points[1].mean[0] == Approx((a + b) / 2));
  CHECK(points[1].std[0] == Approx(std::abs(a - b) / std::sqrt(2.0)).margin(1e-12));

  // each run has its own directory; its checkpoints went once it was scored, its metrics stay
  const std::string run = f.dir + "/out/curve/n10-seed42";
  CHECK(fs::exists(run + "/metrics.jsonl"));
  CHECK(!fs::exists(run + "/best"));
  for (const auto& e : fs::directory_iterator(run)) CHECK(e.path().filename().string().rfind("checkpoint-", 0) != 0);
  // 10 examples in batches of 8 are 2 steps an epoch: --min-steps 4 made it 4, evaluated at each (10 at most)
  CHECK(steps_and_evaluations(run) == std::pair<int64_t, int64_t>{4, 4});

  // the same size and seed give the same scores again
  const LearningCurve again = f.run("again", {10}, 1);
  REQUIRE(again.runs.size() == 1);
  CHECK(again.runs[0].scores == curve.runs[0].scores);
  CHECK(again.to_json().at("runs").size() == 1);
  CHECK(again.to_json().at("summary")[0].at("dev_std").at("accuracy").is_null());  // one run has no sample std
}

TEST_CASE("a learning curve run again goes on where it stopped: finished runs are taken as measured, a stopped one resumes", "[curve][resume]") {
  CurveFixture f;
  f.trainer.overwrite = false;
  const LearningCurve whole = f.run("whole", {10, 20}, 1);
  REQUIRE(whole.runs.size() == 2);
  // the same curve stopped in its second run at step 2, as Ctrl-C or SIGTERM leaves it: the first
  // run measured, the second with a checkpoint and no record
  f.run("part", {10}, 1);
  const std::string first = f.dir + "/part/curve/n10-seed42", second = f.dir + "/part/curve/n20-seed42";
  REQUIRE(fs::exists(first + ".json"));
  const auto first_metrics = lines_of(first + "/metrics.jsonl");
  TrainerOptions stopped = f.trainer;
  stopped.out = second;
  stopped.stop_at = 2;
  FinetuneOptions twenty = f.task;
  twenty.max_train_examples = 20;
  twenty.warn_unusual = false;
  REQUIRE(run_finetuning(stopped, twenty, f.kind).scores.is_null());
  REQUIRE_FALSE(fs::exists(second + ".json"));

  const LearningCurve resumed = f.run("part", {10, 20}, 1);
  REQUIRE(resumed.runs.size() == 2);
  CHECK(lines_of(first + "/metrics.jsonl") == first_metrics);  // not trained again
  CHECK(resumed.runs[0].scores == whole.runs[0].scores);
  CHECK(resumed.runs[1].scores == whole.runs[1].scores);  // resumed exactly, not started afresh
  CHECK(steps_and_evaluations(second).first == 4);
  CHECK(lines_of(f.dir + "/part/learning_curve.csv") == lines_of(f.dir + "/whole/learning_curve.csv"));

  // run again with other settings: refused, naming the record and what differs
  f.trainer.lr = 1e-3f;
  CHECK_THROWS_WITH(f.run("part", {10, 20}, 1), Contains(first + ".json") && Contains("learning_rate") &&
                                                    Contains("--overwrite"));
  // --overwrite measures every run again
  f.trainer.overwrite = true;
  f.run("part", {10}, 1);
  CHECK(lines_of(first + "/metrics.jsonl") != first_metrics);  // trained again, at the new rate
}

TEST_CASE("a learning curve clamps a size above the training set to all of it and runs it once", "[curve]") {
  CurveFixture f;
  const LearningCurve curve = f.run("out", {0, 1000}, 1);
  REQUIRE(curve.runs.size() == 1);  // 1000 came to all 50 lines; "all" is the same run
  CHECK(curve.runs[0].examples == 50);
  // 50 examples are 7 steps of 8, more than --min-steps 4: one epoch, evaluated once, as asked
  CHECK(steps_and_evaluations(f.dir + "/out/curve/n1000-seed42") == std::pair<int64_t, int64_t>{7, 1});
  // options a curve cannot take are refused before any run
  f.task.predictions = f.dir + "/p.tsv";
  CHECK_THROWS_WITH(f.run("out2", {10}, 1), Contains("--predictions"));
}

TEST_CASE("the learning-curve summary is the mean and sample std of each metric per size", "[curve]") {
  LearningCurve c;
  c.metrics = {"accuracy", "f1"};
  c.runs = {run_with(50, 1, 0.5, 0.2), run_with(50, 2, 0.7, 0.4), run_with(50, 3, 0.9, 0.9), run_with(100, 1, 0.8, 0.6)};
  const auto points = c.summary();
  REQUIRE(points.size() == 2);
  CHECK(points[0].examples == 50);
  CHECK(points[0].runs == 3);
  CHECK(points[0].mean[0] == Approx(0.7));
  CHECK(points[0].std[0] == Approx(0.2));  // sqrt((0.04 + 0 + 0.04) / 2)
  CHECK(points[0].mean[1] == Approx(0.5));
  CHECK(points[0].std[1] == Approx(std::sqrt((0.09 + 0.01 + 0.16) / 2)));
  CHECK(std::isnan(points[1].std[0]));
  CHECK(c.summary_table().find("0.7000 ± 0.2000") != std::string::npos);
  std::istringstream csv(c.summary_csv());
  std::string header, first;
  std::getline(csv, header);
  std::getline(csv, first);
  CHECK(header == "examples,runs,dev_accuracy_mean,dev_accuracy_std,dev_f1_mean,dev_f1_std");
  CHECK(first.rfind("50,3,0.7", 0) == 0);
}

TEST_CASE("learning-curve sizes: a list of positive sizes or all, each once", "[curve]") {
  CHECK(parse_curve_sizes("50,100,200,500,all") == std::vector<size_t>{50, 100, 200, 500, 0});
  CHECK(parse_curve_sizes("all, 10") == std::vector<size_t>{0, 10});
  CHECK_THROWS_WITH(parse_curve_sizes("0"), Contains("--learning-curve '0'") && Contains("positive"));
  CHECK_THROWS_WITH(parse_curve_sizes("abc"), Contains("--learning-curve 'abc'") && Contains("'abc' is not a number"));
  CHECK_THROWS_WITH(parse_curve_sizes(""), Contains("--learning-curve ''") && Contains("no sizes"));
  CHECK_THROWS_WITH(parse_curve_sizes("50,100,50"), Contains("--learning-curve '50,100,50'") && Contains("50 is given twice"));
  CHECK_THROWS_WITH(parse_curve_sizes("all,all"), Contains("all is given twice"));
  CHECK_THROWS_WITH(parse_curve_sizes("50,,100"), Contains("an empty size"));
  CHECK_THROWS_WITH(parse_curve_sizes("-5"), Contains("'-5' is not a number"));
}

TEST_CASE("fine-tuning settings outside the usual ranges are warned about where they matter", "[curve][warnings]") {
  const std::string checkpoint = temp_path("xgrad_warn_ckpt");
  fs::create_directories(checkpoint);
  TrainerOptions t;  // bert_finetune's defaults: lr 5e-5, batch 32, 3 epochs
  t.lr = 5e-5f, t.batch = 32, t.epochs = 3;
  FinetuneOptions o;
  o.model = checkpoint;
  CHECK(unusual_settings(t, o, 1, 2400).empty());

  TrainerOptions fast = t;
  fast.lr = 1e-3f;
  const auto lr = unusual_settings(fast, o, 1, 2400);
  REQUIRE(lr.size() == 1);
  CHECK_THAT(lr[0], Contains("--learning-rate 0.001"));
  FinetuneOptions preset = o;
  preset.model = "tiny";  // trained from scratch: other rates, batches and lengths are normal
  fast.batch = 4, fast.epochs = 50;
  CHECK(unusual_settings(fast, preset, 1, 2400).empty());

  TrainerOptions small = t;
  small.batch = 8;
  REQUIRE(unusual_settings(small, o, 1, 2400).size() == 1);
  CHECK_THAT(unusual_settings(small, o, 1, 2400)[0], Contains("effective batch 8"));
  small.grad_accum = 2;
  CHECK(unusual_settings(small, o, 1, 2400).empty());  // 16
  TrainerOptions big = t;
  big.grad_accum = 2;
  CHECK(unusual_settings(big, o, 2, 2400).size() == 0);  // 128
  CHECK_THAT(unusual_settings(big, o, 4, 2400).at(0), Contains("effective batch 256 (--per-device-train-batch-size 32 x --gradient-accumulation-steps 2 x 4 ranks)"));

  TrainerOptions long_run = t;
  long_run.epochs = 20;
  CHECK_THAT(unusual_settings(long_run, o, 1, 2400).at(0), Contains("--num-train-epochs 20") && Contains("--patience"));
  FinetuneOptions patient = o;
  patient.patience = 3;
  CHECK(unusual_settings(long_run, patient, 1, 2400).empty());

  TrainerOptions one = t;
  one.epochs = 1;
  CHECK_THAT(unusual_settings(one, o, 1, 2400).at(0), Contains("--num-train-epochs 1 over 2400 training examples"));
  CHECK(unusual_settings(one, o, 1, 50000).empty());  // a large set: one epoch is many steps
  one.min_steps = 200;                                 // 200 x 32 = 6400 examples: more than 2 epochs of 2400
  CHECK(unusual_settings(one, o, 1, 2400).empty());
  TrainerOptions steps = t;
  steps.epochs = 0;  // --steps: no epochs to judge
  CHECK(unusual_settings(steps, o, 1, 100).empty());
  fs::remove_all(checkpoint);
}
