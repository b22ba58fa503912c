// The Trainer with a task it has never heard of (fitting a line with one Linear layer, written
// here as any later task would be): it trains, evaluates, saves, stops on Ctrl-C with a
// checkpoint, resumes exactly, and refuses another task's checkpoint.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "nn/layers.hpp"
#include "nn/safetensors.hpp"
#include "tests/temp_path.hpp"
#include "training/output_dir.hpp"
#include "util/checksums.hpp"
#include "training/run_summary.hpp"
#include "training/trainer.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

struct LineOptions : ResumableOptions {
  size_t points = 32;  // x in [0, 1) at this many evenly spaced points
  static const OptionTable<LineOptions>& table() {
    static const OptionTable<LineOptions> t =
        OptionTable<LineOptions>().add("--points", &LineOptions::points, "points on the line", OnResume::Restore, at_least(1));
    return t;
  }
};

// Fits y = 3x - 1. Raises `signal` while drawing batch number `interrupt_at` (counting from 1), as
// a Ctrl-C (or a `kill`) during training would.
class LineTask : public Task {
 public:
  LineTask(const LineOptions& o, const TaskContext& ctx, int interrupt_at, int signal)
      : opt_(o), interrupt_at_(interrupt_at), signal_(signal) {
    for (Tensor* p : {&line_.weight, &line_.bias}) p->data()[0] = 0.f;
    if (!ctx.checkpoint.empty())
      line_.load_state_dict(nn::safetensors::read_float_tensors((fs::path(ctx.checkpoint) / "line.safetensors").string()));
  }
  std::string name() const override { return "line"; }
  std::string describe() const override { return "a line"; }
  nn::Module& model() override { return line_; }
  size_t train_examples_per_epoch() override { return opt_.points; }

  BatchLoss next_batch_loss(size_t batch_size) override {
    if (++batches_ == interrupt_at_) std::raise(signal_);
    std::vector<float> x, y;
    for (size_t i = 0; i < batch_size; ++i, ++position_) {
      x.push_back(float(position_ % opt_.points) / float(opt_.points));
      y.push_back(3.f * x.back() - 1.f);
    }
    const Tensor loss = mse_loss(line_.forward(Tensor::from_vector(x, {batch_size, 1})), Tensor::from_vector(y, {batch_size, 1}));
    return {loss, {{"mse", loss.item()}}, {{"examples", double(batch_size)}}, batch_size};
  }
  Scalars train_metrics(const Counts& c) const override { return {{"examples", c.at("examples")}}; }
  Evaluation evaluate(size_t) override {
    const float w = line_.weight.data()[0], b = line_.bias.data()[0];
    return {{{"weight_error", std::fabs(w - 3.f)}, {"bias_error", std::fabs(b + 1.f)}}, fmt::format("w {:.3f}, b {:.3f}", w, b)};
  }
  nlohmann::json data_state() const override { return {{"position", position_}}; }
  void restore_data_state(const nlohmann::json& s) override { position_ = s.at("position"); }
  void save(const std::string& dir, const std::function<void(const std::string&)>& extra) const override {
    const std::string tmp = dir + ".tmp";
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    nn::safetensors::write((fs::path(tmp) / "line.safetensors").string(), line_.state_dict());
    extra(tmp);
    fs::remove_all(dir);
    fs::rename(tmp, dir);
  }

 private:
  LineOptions opt_;
  int interrupt_at_, signal_;
  int batches_ = 0;
  size_t position_ = 0;
  nn::Linear line_{1, 1};
};

TrainerOptions line_trainer(const std::string& name) {
  TrainerOptions t;
  t.out = temp_path(name);
  fs::remove_all(t.out);
  t.batch = 8;
  t.lr = 0.05f;
  t.steps = 12;
  t.warmup = 0;
  t.schedule = "constant";
  t.clip = 0;
  t.eval_every = 4;
  t.save_every = 0;
  t.log_every = 1;
  t.quiet = true;
  return t;
}

RunResult run_line(const TrainerOptions& t, LineOptions o = {}, int interrupt_at = -1, int signal = SIGINT) {
  Trainer trainer(t, BoundOptions(LineOptions::table(), o),
                  [&](const TaskContext& ctx) { return std::make_unique<LineTask>(o, ctx, interrupt_at, signal); });
  return trainer.run();
}
int64_t train_line(const TrainerOptions& t, LineOptions o = {}, int interrupt_at = -1) { return run_line(t, o, interrupt_at).step; }

std::vector<nlohmann::json> rows(const std::string& out) {
  std::ifstream in(fs::path(out) / "metrics.jsonl");
  std::vector<nlohmann::json> r;
  for (std::string l; std::getline(in, l);) r.push_back(nlohmann::json::parse(l));
  return r;
}

float weight_at(const std::string& checkpoint) {
  return nn::safetensors::read_float_tensors(checkpoint + "/line.safetensors").at("weight").data()[0];
}

}  // namespace

TEST_CASE("the Trainer trains a task it knows nothing of, with its metrics", "[trainer]") {
  TrainerOptions t = line_trainer("xgrad_trainer_line");
  t.steps = 200;
  t.lr = 0.1f;
  t.schedule = "linear";
  t.eval_every = 100;
  REQUIRE(train_line(t) == 200);
  std::vector<double> losses;
  size_t evals = 0;
  for (const auto& r : rows(t.out)) {
    if (r.contains("loss")) {
      losses.push_back(r["loss"]);
      CHECK(r["mse_loss"] == r["loss"]);  // the one loss part, named by the task
      CHECK(r["examples"] == 8);          // the task's metric from counts over the window
      CHECK(r["lr"].get<double>() <= 0.1 + 1e-6);
    }
    if (r.contains("eval_weight_error")) ++evals;
  }
  REQUIRE(losses.size() == 200);
  CHECK(losses.back() < losses.front() / 10);
  CHECK(evals == 2);
  const auto state = nlohmann::json::parse(std::ifstream(t.out + "/checkpoint-000200/training_state.json"));
  CHECK(state["task"] == "line");
  CHECK(state["options"]["points"] == 32);
  CHECK(state["data"]["position"] == 1600);
  fs::remove_all(t.out);
}

TEST_CASE("Ctrl-C saves a checkpoint and stops, and resuming from it equals an uninterrupted run", "[trainer]") {
  const TrainerOptions full = line_trainer("xgrad_trainer_full");
  REQUIRE(train_line(full) == 12);
  const TrainerOptions part = line_trainer("xgrad_trainer_interrupted");
  CHECK(train_line(part, {}, /*interrupt_at=*/5) == 5);  // the step under way finishes, then it stops
  CHECK(fs::exists(part.out + "/checkpoint-000005/line.safetensors"));
  TrainerOptions resumed = line_trainer("xgrad_trainer_resumed");
  resumed.out = part.out;
  resumed.resume = part.out;
  CHECK(train_line(resumed) == 12);
  CHECK(weight_at(part.out + "/checkpoint-000012") == weight_at(full.out + "/checkpoint-000012"));
  CHECK(weight_at(full.out + "/checkpoint-000012") != 0.f);

  // A checkpoint of another task, or with other task options, is refused.
  LineOptions other;
  other.points = 7;
  resumed.resume = part.out + "/checkpoint-000005";
  CHECK_THROWS_WITH(train_line(resumed, other), Contains("--points 7 differs from the checkpoint's 32"));
  const std::string state_file = part.out + "/checkpoint-000005/training_state.json";
  auto state = nlohmann::json::parse(std::ifstream(state_file));
  state["task"] = "mlm_nsp";
  std::ofstream(state_file) << state.dump();
  CHECK_THROWS_WITH(train_line(resumed), Contains("training_state.json") && Contains("remove checksums.json"));
  fs::remove(part.out + "/checkpoint-000005/checksums.json");  // edited on purpose
  CHECK_THROWS_WITH(train_line(resumed), Contains("a checkpoint of task 'mlm_nsp', not 'line'"));
  fs::remove_all(full.out);
  fs::remove_all(part.out);
}

TEST_CASE("SIGTERM saves and stops like Ctrl-C, and the result says which signal", "[trainer]") {
  const TrainerOptions t = line_trainer("xgrad_trainer_sigterm");
  const auto before = std::signal(SIGTERM, SIG_DFL);  // Catch2's own handler, in a test run
  std::signal(SIGTERM, before);
  const RunResult r = run_line(t, {}, /*interrupt_at=*/3, SIGTERM);
  CHECK(r.step == 3);
  CHECK(r.signal == SIGTERM);
  CHECK(fs::exists(t.out + "/checkpoint-000003/line.safetensors"));
  CHECK(std::signal(SIGTERM, before) == before);  // the handler is put back after the run
  fs::remove_all(t.out);
  CHECK(run_line(line_trainer("xgrad_trainer_no_signal")).signal == 0);
  fs::remove_all(temp_path("xgrad_trainer_no_signal"));
}

namespace {
// A callback as a user writes one: it records what the loop reports, asks for an extra evaluation
// at step 3 and stops the run once the weight is near 3.
struct Recorder : TrainerCallback {
  std::vector<std::string> events;
  std::vector<int64_t> logged, evaluated, saved;
  void on_train_begin(const LoopState& s) override { events.push_back(fmt::format("begin {}", s.step)); }
  void on_step_end(const LoopState& s, LoopControl& control) override {
    if (s.step == 3) control.evaluate = true;
  }
  void on_log(const LoopState& s, const Scalars& row) override {
    logged.push_back(s.step);
    CHECK(row.front().first == "loss");
  }
  void on_evaluate(const LoopState& s, const Evaluation& e, LoopControl& control) override {
    evaluated.push_back(s.step);
    if (e.metrics.front().second < 0.5) control.stop = true;  // weight_error
  }
  void on_save(const LoopState& s, const std::string& dir) override {
    saved.push_back(s.step);
    CHECK(fs::exists(dir + "/line.safetensors"));
  }
  void on_train_end(const LoopState& s) override {
    events.push_back(fmt::format("end {} stopped {} converged {} signal {}", s.step, s.stopped, s.converged, s.signal));
  }
};
}  // namespace

TEST_CASE("callbacks see the loop's steps, logs, evaluations and checkpoints, and can ask for an evaluation or a stop",
          "[trainer]") {
  TrainerOptions t = line_trainer("xgrad_trainer_callbacks");
  t.steps = 400;
  t.lr = 0.1f;
  t.log_every = 5;
  t.eval_every = 10;
  t.save_every = 50;
  LineOptions o;
  Trainer trainer(t, BoundOptions(LineOptions::table(), o),
                  [&](const TaskContext& ctx) { return std::make_unique<LineTask>(o, ctx, -1, SIGINT); });
  auto recorder = std::make_shared<Recorder>();
  trainer.add_callback(recorder);
  const RunResult r = trainer.run();
  REQUIRE(r.step > 10);
  REQUIRE(r.step < 400);  // stopped by the callback
  CHECK(r.signal == 0);
  CHECK(r.step % 10 == 0);  // after an evaluation of the cadence
  REQUIRE(recorder->evaluated.size() >= 2);
  CHECK(recorder->evaluated[0] == 3);  // asked for by the callback
  CHECK(recorder->evaluated[1] == 10);
  CHECK(recorder->logged.front() == 5);
  CHECK(recorder->logged.back() == r.step);
  CHECK(recorder->saved.back() == r.step);  // a stop saves, as an interruption does
  CHECK(fs::exists(fmt::format("{}/checkpoint-{:06d}/line.safetensors", t.out, r.step)));
  CHECK(recorder->events == std::vector<std::string>{"begin 0", fmt::format("end {} stopped true converged false signal 0", r.step)});
  // the extra evaluation is in metrics.jsonl like the others
  size_t at_3 = 0;
  for (const auto& row : rows(t.out)) at_3 += row.contains("eval_weight_error") && row["step"] == 3;
  CHECK(at_3 == 1);
  fs::remove_all(t.out);
}

TEST_CASE("rotation removes only the run's older checkpoints, by renaming first, and cleans leftovers", "[trainer]") {
  TrainerOptions t = line_trainer("xgrad_trainer_rotation");
  t.save_every = 4;
  t.keep_checkpoints = 3;
  REQUIRE(train_line(t) == 12);  // checkpoints 4, 8, 12
  // leftovers of saves and removals that a kill -9 interrupted
  fs::create_directories(t.out + "/checkpoint-000002.tmp.999999/optimizer");
  fs::create_directories(t.out + "/checkpoint-000001.del.999999");
  // Resumed from checkpoint 4 with --keep 1: the new checkpoint 6 is the newest of this line and
  // stays; 8 and 12 (numbered above it) are not this run's to remove; 4 goes.
  TrainerOptions resumed = line_trainer("xgrad_trainer_rotation_resumed");
  resumed.out = "";  // no --out: the resumed run's directory
  resumed.resume = t.out + "/checkpoint-000004/";
  resumed.save_every = 2;
  resumed.keep_checkpoints = 1;
  resumed.stop_at = 6;
  REQUIRE(train_line(resumed) == 6);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(t.out)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{".xgrad-run", "checkpoint-000006", "checkpoint-000008", "checkpoint-000012", "metrics.jsonl"});
  // The first run's rows after step 4 were dropped on resuming there: each step is logged once.
  std::vector<int64_t> steps;
  for (const auto& r : rows(t.out))
    if (r.contains("loss")) steps.push_back(r["step"]);
  CHECK(steps == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  // Relaunched with the same --stop-at: already there, so no step (not one more per relaunch).
  resumed.resume = t.out + "/checkpoint-000006";
  CHECK(train_line(resumed) == 6);
  CHECK(!fs::exists(t.out + "/checkpoint-000007"));
  fs::remove_all(t.out);
}

TEST_CASE("a forged checksums.json cannot reach outside the checkpoint or exhaust the stack", "[trainer]") {
  const std::string dir = temp_path("xgrad_trainer_checksums");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(fs::path(dir) / "model.safetensors") << "weights";
  write_checksums(dir);
  CHECK_NOTHROW(verify_checksums(dir));
  for (const char* name : {"../model.safetensors", "/etc/hostname"}) {
    std::ofstream(fs::path(dir) / "checksums.json") << nlohmann::json{{"files", {{name, {{"size", 1}, {"crc32c", "0"}}}}}}.dump();
    CHECK_THROWS_WITH(verify_checksums(dir), Contains(std::string("lists '") + name + "', not a file of the checkpoint's directory"));
  }
  std::ofstream(fs::path(dir) / "checksums.json") << "{\"files\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  CHECK_THROWS_WITH(verify_checksums(dir), Contains("unreadable"));
  fs::remove_all(dir);
}

TEST_CASE("checkpoints order by step past a million, for resume and rotation", "[trainer]") {
  const std::string out = temp_path("xgrad_trainer_million");
  fs::remove_all(out);
  for (int64_t step : {998000, 999000, 1000000, 1001000}) {
    fs::create_directories(fs::path(out) / checkpoint_name(step));
    std::ofstream(fs::path(out) / checkpoint_name(step) / "training_state.json") << "{}";
  }
  fs::create_directories(fs::path(out) / "checkpoint-000005.tmp.7");  // not a checkpoint
  CHECK(checkpoint_step("checkpoint-1000000") == 1000000);
  CHECK(checkpoint_step("checkpoint-000005.tmp.7") == std::nullopt);
  const auto all = list_checkpoints(out);
  REQUIRE(all.size() == 4);
  CHECK(fs::path(all.back()).filename() == "checkpoint-1001000");
  CHECK(resolve_checkpoint(out) == (fs::path(out) / "checkpoint-1001000").string());
  prune_checkpoints(out, 2, 1001000);  // keeps the two newest by step
  CHECK(!fs::exists(fs::path(out) / "checkpoint-998000"));
  CHECK(!fs::exists(fs::path(out) / "checkpoint-999000"));
  CHECK(fs::exists(fs::path(out) / "checkpoint-1000000"));
  fs::remove_all(out);
}

TEST_CASE("one run per --out: locked, an earlier run's files refused unless --overwrite, nothing left by a failed start", "[trainer]") {
  TrainerOptions t = line_trainer("xgrad_trainer_lock");
  REQUIRE(train_line(t) == 12);
  // another run holds the directory (flock: any other open file, this process included)
  {
    OutputDirectory held(t.out, /*resuming=*/true, /*overwrite=*/false);
    TrainerOptions second = t;
    second.resume = t.out;
    second.steps = 12;
    CHECK_THROWS_WITH(train_line(second), Contains("another run is writing into it") && Contains(t.out));
  }
  // a new run into a directory holding a run
  CHECK_THROWS_WITH(train_line(t), Contains("--output-dir " + t.out + " is not empty (checkpoint-000012, metrics.jsonl)") &&
                                       Contains("--overwrite"));
  CHECK(fs::exists(t.out + "/checkpoint-000012/line.safetensors"));
  // ... and into one a run left before its first save (stopped while it read its data): nothing to
  // resume, so the message does not offer --resume
  {
    TrainerOptions unsaved = line_trainer("xgrad_trainer_unsaved");
    fs::create_directories(unsaved.out);
    std::ofstream(unsaved.out + "/.xgrad-run") << "{}";  // every run marks its --out
    std::ofstream(unsaved.out + "/metrics.jsonl") << "";
    try {
      train_line(unsaved);
      FAIL("a non-empty --out was taken");
    } catch (const std::exception& e) {
      CHECK_THAT(e.what(), Contains("an earlier run's files (metrics.jsonl) but no checkpoint") && Contains("--overwrite") &&
                               !Contains("--resume"));
    }
    fs::remove_all(unsaved.out);
  }
  // a folder of the user's own files, named as a run's would be (a vocabulary beside a corpus), is
  // no run's: refused with or without --overwrite, and nothing in it is touched
  {
    TrainerOptions mine = line_trainer("xgrad_trainer_users_folder");
    fs::create_directories(mine.out);
    std::ofstream(mine.out + "/vocab.txt") << "[PAD]\n[UNK]\n";
    std::ofstream(mine.out + "/corpus.txt") << "a line\n";
    for (bool overwrite : {false, true}) {
      mine.overwrite = overwrite;
      CHECK_THROWS_WITH(train_line(mine), Contains("holds files no training run wrote (corpus.txt, vocab.txt)") &&
                                              Contains("--overwrite replaces only an earlier run's files"));
      CHECK(fs::file_size(mine.out + "/vocab.txt") == 12);
      std::vector<std::string> names;
      for (const auto& e : fs::directory_iterator(mine.out)) names.push_back(e.path().filename().string());
      std::sort(names.begin(), names.end());
      CHECK(names == std::vector<std::string>{"corpus.txt", "vocab.txt"});  // no mark, no stash left
    }
    fs::remove_all(mine.out);
  }
  // ... unless the start that left them was killed before its first step (its mark is there): what
  // it wrote is removed and the new run goes on
  {
    TrainerOptions killed = line_trainer("xgrad_trainer_killed_start");
    fs::create_directories(killed.out);
    std::ofstream(killed.out + "/metrics.jsonl") << "{\"step\": 999}\n";
    std::ofstream(killed.out + "/vocab.txt") << "[PAD]\n";
    std::ofstream(killed.out + "/notes.txt") << "the user's\n";
    std::ofstream(killed.out + "/.starting") << "";
    CHECK_THROWS_WITH(train_line(killed), Contains("(notes.txt)"));  // not a run's file: still refused, and kept
    CHECK(fs::exists(killed.out + "/notes.txt"));
    CHECK(!fs::exists(killed.out + "/metrics.jsonl"));
    CHECK(!fs::exists(killed.out + "/.starting"));  // the failed start took its own mark away
    fs::remove(killed.out + "/notes.txt");
    std::ofstream(killed.out + "/metrics.jsonl") << "{\"step\": 999}\n";
    std::ofstream(killed.out + "/.starting") << "";
    {
      OutputDirectory d(killed.out, /*resuming=*/false, /*overwrite=*/false);
      CHECK(d.cleared() == std::vector<std::string>{"metrics.jsonl"});
      CHECK(fs::exists(killed.out + "/.starting"));  // this start's own mark, until its first step
    }
    REQUIRE(train_line(killed) == 12);
    CHECK(rows(killed.out).front()["step"] != 999);
    CHECK(!fs::exists(killed.out + "/.starting"));
    fs::remove_all(killed.out);
  }
  // ... and when that start was an --overwrite one, the run it had set aside comes back whole (not
  // under the killed start's metrics.jsonl), with what the kill left half-written gone
  {
    const std::string out = temp_path("xgrad_trainer_killed_overwrite");
    fs::remove_all(out);
    fs::create_directories(out + "/.replaced.999/checkpoint-000001");
    std::ofstream(out + "/.xgrad-run") << "{}";
    std::ofstream(out + "/.replaced.999/metrics.jsonl") << "the earlier run's\n";
    std::ofstream(out + "/metrics.jsonl") << "";
    std::ofstream(out + "/vocab.txt.tmp") << "[PAD]\n";
    std::ofstream(out + "/.starting") << "";
    CHECK_THROWS_WITH(OutputDirectory(out, /*resuming=*/false, /*overwrite=*/false),
                      Contains("is not empty (checkpoint-000001, metrics.jsonl)"));
    std::ifstream in(out + "/metrics.jsonl");
    std::string line;
    std::getline(in, line);
    CHECK(line == "the earlier run's");
    CHECK(!fs::exists(out + "/vocab.txt.tmp"));
    CHECK(!fs::exists(out + "/.replaced.999"));
    fs::remove_all(out);
  }
  t.overwrite = true;
  t.steps = 5;
  fs::create_directories(t.out + "/notes");  // not a run's file: left alone
  fs::create_directories(t.out + "/best");   // the earlier run's best model: replaced with it
  // An --overwrite start that fails puts the earlier run back as it was.
  const size_t earlier_rows = rows(t.out).size();
  TrainerOptions failing = t;
  failing.tensorboard = "/proc/xgrad_tb";
  CHECK_THROWS_WITH(train_line(failing), Contains("/proc/xgrad_tb"));
  CHECK(fs::exists(t.out + "/checkpoint-000012/line.safetensors"));
  CHECK(fs::exists(t.out + "/best"));
  CHECK(rows(t.out).size() == earlier_rows);
  // ... and so does one told to stop before its first step
  failing = t;
  failing.stop_at = 0;
  CHECK(train_line(failing) == 0);
  CHECK(fs::exists(t.out + "/checkpoint-000012/line.safetensors"));
  CHECK(fs::exists(t.out + "/best"));
  // best/ stays in place until the task is built (it may start from it), then goes aside with the rest
  {
    OutputDirectory d(t.out, /*resuming=*/false, /*overwrite=*/true);
    CHECK(!fs::exists(t.out + "/checkpoint-000012"));
    CHECK(fs::exists(t.out + "/best"));
    d.set_aside_models();
    CHECK(!fs::exists(t.out + "/best"));
  }  // killed before its first step: the files stay set aside ...
  CHECK(!fs::exists(t.out + "/checkpoint-000012"));
  {
    OutputDirectory d(t.out, /*resuming=*/true, /*overwrite=*/false);  // ... and the next start puts them back
    CHECK(fs::exists(t.out + "/checkpoint-000012/line.safetensors"));
    CHECK(fs::exists(t.out + "/best"));
  }
  // a file the new run reads (--init-from OUT/checkpoint-N) is not set aside: refused, nothing moved
  CHECK_THROWS_WITH(OutputDirectory(t.out, false, true, {t.out + "/./checkpoint-000012/line.safetensors"}),
                    Contains("--overwrite would set aside checkpoint-000012, which this run reads"));
  CHECK(fs::exists(t.out + "/checkpoint-000012/line.safetensors"));
  REQUIRE(train_line(t) == 5);
  CHECK(!fs::exists(t.out + "/checkpoint-000012"));
  CHECK(!fs::exists(t.out + "/best"));
  CHECK(fs::exists(t.out + "/notes"));
  CHECK(rows(t.out).size() == 5 + 2);  // this run's metrics only: 5 steps, 2 evaluations
  for (const auto& e : fs::directory_iterator(t.out))  // nothing set aside is left
    CHECK(e.path().filename().string().rfind(".replaced.", 0) != 0);
  fs::remove_all(t.out);

  // A start that fails after the directory was made leaves none behind; an unwritable one is
  // found before training.
  TrainerOptions bad = line_trainer("xgrad_trainer_failed_start");
  bad.tensorboard = "/proc/xgrad_tb";
  CHECK_THROWS_WITH(train_line(bad), Contains("/proc/xgrad_tb"));
  CHECK(!fs::exists(bad.out));
  bad = line_trainer("xgrad_trainer_failed_start");
  bad.out = "/proc";
  CHECK_THROWS_WITH(train_line(bad), Contains("--output-dir /proc: not writable"));
  bad.out = "/proc/xgrad_out";
  CHECK_THROWS_WITH(train_line(bad), Contains("--output-dir /proc/xgrad_out: cannot create"));
}

TEST_CASE("a non-finite loss stops the run naming the step, or skips the update by option", "[trainer]") {
  TrainerOptions t = line_trainer("xgrad_trainer_nonfinite");
  t.lr = 1e30f;  // the first update throws the weights to ~1e30: the next loss overflows
  CHECK_THROWS_WITH(train_line(t), Contains("[trainer] step 2: the loss is inf") && Contains("stopped before updating") &&
                                       Contains("--on-nonfinite skip"));
  fs::remove_all(t.out);
  t.on_nonfinite = "skip";
  REQUIRE(train_line(t) == 12);
  const float w = weight_at(t.out + "/checkpoint-000012");
  CHECK(std::isfinite(w));  // the weights of step 1; no update from an infinite loss
  CHECK(rows(t.out).at(0)["step"] == 1);
  for (const auto& r : rows(t.out)) CHECK((!r.contains("loss") || r["step"] == 1));  // skipped steps are not logged as trained
  fs::remove_all(t.out);
  t.on_nonfinite = "ignore";
  CHECK_THROWS_WITH(train_line(t), Contains("--on-nonfinite 'ignore': not one of stop, skip"));
  // --detect-anomaly names the op: the squared error overflows first
  fs::remove_all(t.out);
  t.on_nonfinite = "stop";
  t.detect_anomaly = true;
  CHECK_THROWS_WITH(train_line(t), Contains("[anomaly] '") && Contains("produced inf in its output"));
  CHECK_FALSE(detect_anomaly());  // on for that run only
}

TEST_CASE("checkpoints list their files' CRC32C, and a damaged one is refused on resume", "[trainer]") {
  TrainerOptions t = line_trainer("xgrad_trainer_checksums");
  t.stop_at = 4;
  REQUIRE(train_line(t) == 4);
  const std::string ckpt = t.out + "/checkpoint-000004";
  const auto listed = nlohmann::json::parse(std::ifstream(ckpt + "/checksums.json"))["files"];
  for (const char* f : {"line.safetensors", "training_state.json", "optimizer.safetensors", "optimizer.json"}) CHECK(listed.contains(f));
  const std::string weights = ckpt + "/line.safetensors";
  const auto size = fs::file_size(weights);
  auto flip_last_byte = [&] {
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(long(size) - 1);
    const char c = char(f.get() ^ 0x01);
    f.seekp(long(size) - 1);
    f.put(c);
  };
  flip_last_byte();  // one bit of the bias
  TrainerOptions resumed = line_trainer("xgrad_trainer_checksums_resumed");
  resumed.out = "";
  resumed.resume = t.out;
  CHECK_THROWS_WITH(train_line(resumed), Contains("[checksums] " + weights + ": CRC32C") && Contains("the file is damaged"));
  flip_last_byte();  // back as it was: resumes
  CHECK(train_line(resumed) == 12);
  fs::resize_file(t.out + "/checkpoint-000012/line.safetensors", size - 4);
  resumed.resume = t.out + "/checkpoint-000012";
  CHECK_THROWS_WITH(train_line(resumed), Contains(std::to_string(size - 4) + " bytes") && Contains("truncated"));
  fs::remove_all(t.out);
}

TEST_CASE("Trainer: --warmup-ratio sets the warm-up as a fraction of the run's steps", "[trainer]") {
  TrainerOptions t = line_trainer("xgrad_trainer_warmup_ratio");
  t.warmup = -1;
  t.warmup_ratio = 0.25f;  // 12 steps: 3 of warm-up, lr/3, 2lr/3, then lr
  REQUIRE(train_line(t) == 12);
  const auto r = rows(t.out);
  REQUIRE(r.size() >= 4);
  CHECK(r[1].at("lr").get<double>() == Approx(t.lr / 3));
  CHECK(r[2].at("lr").get<double>() == Approx(2 * t.lr / 3));
  CHECK(r[3].at("lr").get<double>() == Approx(t.lr));
  t.warmup_ratio = 1.5f;
  CHECK_THROWS_WITH(train_line(t), Contains("--warmup-ratio"));
  fs::remove_all(t.out);
}

TEST_CASE("trainer: --steps (--max-steps) overrides --epochs on a new run, as transformers' max_steps", "[trainer][cli]") {
  TrainerOptions t;
  t.epochs = 3;
  t.steps = 2;
  CHECK_FALSE(xg::training::steps_override_epochs(t, /*steps_given=*/false, false));
  CHECK(t.epochs == 3);  // epochs decide
  CHECK_FALSE(xg::training::steps_override_epochs(t, true, false));
  CHECK(t.epochs == 0);  // steps decide, quietly: only --steps was given
  t.epochs = 4;
  const auto note = xg::training::steps_override_epochs(t, true, true);
  REQUIRE(note);
  CHECK_THAT(*note, Catch::Contains("--max-steps 2 overrides --num-train-epochs 4"));
  CHECK(t.epochs == 0);
  t.epochs = 3;
  t.resume = "runs/x";  // a resumed run keeps its plan
  CHECK_FALSE(xg::training::steps_override_epochs(t, true, true));
  CHECK(t.epochs == 3);
}

TEST_CASE("trainer: a fine-tuning run ends with its scores as a table, where the model is and how to use it", "[trainer]") {
  const nlohmann::json scores = {{"dev", {{"accuracy", 0.77}, {"f1", 0.7723}, {"examples", 300}}},
                                 {"test", {{"accuracy", 0.7667}, {"examples", 300}}}};
  const std::string s = finetune_summary(scores, "runs/x/best", 5.53, "bert_infer classify --model runs/x/best");
  CHECK_THAT(s, Contains("final scores of the best model (runs/x/best):"));
  CHECK_THAT(s, Contains("accuracy         f1   examples"));
  CHECK_THAT(s, Contains("  dev        0.7700     0.7723        300"));
  CHECK_THAT(s, Contains("  test       0.7667          -        300"));  // a metric the split lacks
  CHECK_THAT(s, Contains("took 5.5 s; use it: bert_infer classify --model runs/x/best"));
  CHECK_THAT(finetune_summary(scores, "b", 1, ""), Contains("took 1.0 s\n"));
  nlohmann::json at_int8 = scores;  // --score-precision int8: named in the heading, not a row
  at_int8["precision"] = "int8";
  const std::string q = finetune_summary(at_int8, "runs/x/best", 1, "");
  CHECK_THAT(q, Contains("final scores of the best model (runs/x/best, at int8):"));
  CHECK_THAT(q, !Contains("precision"));
  CHECK_THAT(q, Contains("  test       0.7667          -        300"));
  // a multi-task run: a table per task, its rows as wide as the longest split's name
  const nlohmann::json tasks = {{"ner", {{"dev", {{"f1", 0.75}}}, {"dev_at_best_mean", {{"f1", 0.7}}}}}};
  const std::string m = xg::training::multitask_summary(tasks, "runs/m", 2);
  CHECK_THAT(m, Contains("final dev scores of task ner (dev: its best model, runs/m/tasks/ner/best;"));
  CHECK_THAT(m, Contains("  dev                  0.7500          -\n  dev_at_best_mean     0.7000          -\n"));
  CHECK_THAT(m, Contains("took 2.0 s") && !Contains("{"));
}
