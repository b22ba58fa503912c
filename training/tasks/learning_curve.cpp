#include "training/tasks/learning_curve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "training/checkpoints.hpp"
#include "training/distributed.hpp"
#include "util/atomic_file.hpp"
#include "util/json_input.hpp"
#include "util/strings.hpp"

namespace fs = std::filesystem;

namespace xg::training {

namespace {

std::invalid_argument bad_list(const std::string& list, const std::string& why) {
  return std::invalid_argument(fmt::format("[learning curve] --learning-curve '{}': {}", list, why));
}

std::string size_name(size_t n) { return n == 0 ? "all" : std::to_string(n); }

// Scores that count items (dev examples, SQuAD's questions and totals) or are settings (SQuAD v2's
// best null thresholds) rather than measure the model.
bool is_count(const std::string& name) {
  return name == "examples" || name == "entities" || name == "sentences" || name == "questions" || ends_with(name, "total") ||
         ends_with(name, "_thresh");
}

double metric_of(const CurveRun& r, const std::string& m) {
  const auto& dev = r.scores.at("dev");
  return dev.contains(m) && dev.at(m).is_number() ? dev.at(m).get<double>() : std::nan("");
}

// Each run's checkpoints (its best and its last) once it is scored: a curve of many runs of a
// large model would fill the disk; metrics.jsonl stays for plotting.
void remove_checkpoints(const std::string& run_out) {
  for (const auto& e : fs::directory_iterator(run_out)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && (name == "best" || name.rfind("checkpoint-", 0) == 0)) fs::remove_all(e.path());
  }
}

// A finished run's record, OUT/curve/<run>.json beside its folder: its sizes, scores and the
// settings it ran with. A rerun of the same curve takes it instead of training the run again.
struct RunRecord {
  size_t pool = 0, examples = 0;
  nlohmann::json scores, settings;
};

std::string record_path(const std::string& run_out) { return run_out + ".json"; }

std::optional<RunRecord> read_record(const std::string& run_out) {
  const std::string path = record_path(run_out);
  if (!fs::exists(path)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  try {
    const nlohmann::json j = parse_json_bounded(in);
    return RunRecord{j.at("train_pool").get<size_t>(), j.at("train_examples").get<size_t>(), j.at("scores"), j.at("settings")};
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("[learning curve] {}: not a learning-curve run's record ({}): remove it to run that "
                                         "run again", path, e.what()));
  }
}

void write_record(const std::string& run_out, const RunRecord& r) {
  const nlohmann::json j = {{"train_pool", r.pool}, {"train_examples", r.examples}, {"scores", r.scores}, {"settings", r.settings}};
  write_text_atomically(record_path(run_out), j.dump(2) + "\n");
}

// The settings of one run that its scores depend on (the data by its fingerprint, not its path).
nlohmann::json run_settings(const TrainerOptions& t, const FinetuneOptions& o, FinetuneKind& kind) {
  nlohmann::json j = TrainerOptions::table().saved(t);
  j.update(FinetuneOptions::table().saved(o));
  j.update(kind.options().saved());
  // where the data is may change (its fingerprint, saved beside each data path's key, stays)
  std::vector<std::string> paths;
  for (const auto& [key, value] : j.items())
    if (j.contains(key + "_fingerprint")) paths.push_back(key);
  for (const auto& key : paths) j.erase(key);
  return j;
}

// The settings whose values differ between two runs' settings, for a message.
std::string changed_settings(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : a.items())
    if (!b.contains(k) || b.at(k) != v) keys.push_back(k);
  for (const auto& [k, v] : b.items())
    if (!a.contains(k)) keys.push_back(k);
  std::string s;
  for (const auto& k : keys) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace

std::vector<size_t> parse_curve_sizes(const std::string& list) {
  std::vector<size_t> sizes;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    std::string item = list.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    size_t n = 0;
    if (item == "all") {
      n = 0;
    } else if (item.empty()) {
      throw bad_list(list, list.empty() ? "no sizes (give e.g. 50,100,all)" : "an empty size between commas");
    } else if (item.find_first_not_of("0123456789") != std::string::npos || item.size() > 12) {
      throw bad_list(list, fmt::format("'{}' is not a number of examples nor 'all'", item));
    } else if ((n = std::stoull(item)) == 0) {
      throw bad_list(list, "0 examples: sizes are positive (or 'all')");
    }
    if (std::find(sizes.begin(), sizes.end(), n) != sizes.end())
      throw bad_list(list, fmt::format("{} is given twice", size_name(n)));
    sizes.push_back(n);
    start = comma + 1;
  }
  return sizes;
}

std::vector<CurvePoint> LearningCurve::summary() const {
  std::vector<CurvePoint> points;
  std::map<size_t, std::vector<const CurveRun*>> by_size;
  for (const auto& r : runs) by_size[r.examples].push_back(&r);
  for (const auto& [examples, rs] : by_size) {
    CurvePoint p{examples, rs.size(), {}, {}};
    for (const auto& m : metrics) {
      double sum = 0;
      for (const CurveRun* r : rs) sum += metric_of(*r, m);
      const double mean = sum / double(rs.size());
      double squares = 0;
      for (const CurveRun* r : rs) squares += (metric_of(*r, m) - mean) * (metric_of(*r, m) - mean);
      p.mean.push_back(mean);
      p.std.push_back(rs.size() > 1 ? std::sqrt(squares / double(rs.size() - 1)) : std::nan(""));
    }
    points.push_back(std::move(p));
  }
  return points;
}

std::string LearningCurve::rows_csv() const {
  std::string s = "examples,seed";
  for (const auto& m : metrics) s += ",dev_" + m;
  s += "\n";
  for (const auto& r : runs) {
    s += fmt::format("{},{}", r.examples, r.seed);
    for (const auto& m : metrics) s += fmt::format(",{}", metric_of(r, m));
    s += "\n";
  }
  return s;
}

std::string LearningCurve::summary_csv() const {
  std::string s = "examples,runs";
  for (const auto& m : metrics) s += fmt::format(",dev_{}_mean,dev_{}_std", m, m);
  s += "\n";
  for (const auto& p : summary()) {
    s += fmt::format("{},{}", p.examples, p.runs);
    for (size_t i = 0; i < metrics.size(); ++i) s += fmt::format(",{},{}", p.mean[i], p.std[i]);
    s += "\n";
  }
  return s;
}

std::string LearningCurve::summary_table() const {
  std::string s = fmt::format("{:>9} {:>5}", "examples", "runs");
  for (const auto& m : metrics) s += fmt::format("  {:>17}", "dev " + m);
  s += "\n";
  for (const auto& p : summary()) {
    s += fmt::format("{:>9} {:>5}", p.examples, p.runs);
    for (size_t i = 0; i < metrics.size(); ++i) s += fmt::format("  {:>8.4f} ± {:<6.4f}", p.mean[i], p.std[i]);
    s += "\n";
  }
  return s;
}

nlohmann::json LearningCurve::to_json() const {
  nlohmann::json j = {{"runs", nlohmann::json::array()}, {"summary", nlohmann::json::array()}};
  for (const auto& r : runs) {
    nlohmann::json row = r.scores;
    row["examples"] = r.examples;
    row["seed"] = r.seed;
    j["runs"].push_back(std::move(row));
  }
  for (const auto& p : summary()) {
    nlohmann::json mean = nlohmann::json::object(), std = nlohmann::json::object();
    for (size_t i = 0; i < metrics.size(); ++i) {
      mean[metrics[i]] = p.mean[i];
      std[metrics[i]] = std::isfinite(p.std[i]) ? nlohmann::json(p.std[i]) : nlohmann::json(nullptr);
    }
    j["summary"].push_back({{"examples", p.examples}, {"runs", p.runs}, {"dev_mean", mean}, {"dev_std", std}});
  }
  return j;
}

namespace {
// OUT/learning_curve.csv (a row per run) and OUT/learning_curve_summary.csv, each replaced whole.
void write_curve_files(const std::string& out, const LearningCurve& curve) {
  fs::create_directories(out);
  write_text_atomically((fs::path(out) / "learning_curve.csv").string(), curve.rows_csv());
  write_text_atomically((fs::path(out) / "learning_curve_summary.csv").string(), curve.summary_csv());
}
}  // namespace

LearningCurve run_learning_curve(const TrainerOptions& trainer, const FinetuneOptions& task, FinetuneKind& kind,
                                 const CurveOptions& curve) {
  if (Communicator::world().distributed())
    throw std::invalid_argument("[learning curve] --learning-curve runs in one process: start it without mpirun (its runs "
                                "are small; run sizes of your own with --max-train-examples under mpirun instead)");
  if (curve.sizes.empty()) throw std::invalid_argument("[learning curve] --learning-curve: no sizes");
  if (curve.seeds == 0) throw std::invalid_argument("[learning curve] --curve-seeds 0: at least one run per size");
  if (!trainer.resume.empty()) throw std::invalid_argument("[learning curve] --learning-curve starts new runs: --resume-from-checkpoint is not taken");
  if (trainer.stop_at >= 0) throw std::invalid_argument("[learning curve] --learning-curve runs to the end: --stop-at is not taken");
  if (!task.predictions.empty())
    throw std::invalid_argument(fmt::format("[learning curve] --predictions {}: a learning curve writes no predictions "
                                            "(each run would overwrite them)", task.predictions));
  const std::string out = trainer.out.empty() ? trainer.default_out : trainer.out;
  std::vector<size_t> sizes = curve.sizes;  // smallest first, all last: the first run tells the set's size
  std::sort(sizes.begin(), sizes.end(), [](size_t a, size_t b) { return a != 0 && (b == 0 || a < b); });
  auto say = [&](const std::string& s) {
    if (!trainer.quiet) fmt::print("learning curve: {}\n", s);
  };

  LearningCurve result;
  size_t pool = 0;           // the training set's size, once a run has read it
  std::set<size_t> trained;  // sizes run (as examples trained on)
  size_t run_index = 0;
  auto say_clamped = [&](size_t size) {
    say(fmt::format("{} examples: the training set holds {}; the runs of this size train on all of them", size, pool));
  };
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t size = sizes[i];
    if (pool > 0 && trained.count(size == 0 || size >= pool ? pool : size)) {
      say(fmt::format("{} examples: already run (the training set has {})", size_name(size), pool));
      continue;
    }
    if (pool > 0 && size > pool) say_clamped(size);
    for (size_t s = 0; s < curve.seeds; ++s) {
      TrainerOptions t = trainer;
      FinetuneOptions o = task;
      const std::string name = fmt::format("n{}-seed{}", size_name(size), trainer.seed + s);
      t.seed = trainer.seed + s;
      t.out = (fs::path(out) / "curve" / name).string();
      if (!trainer.tensorboard.empty()) t.tensorboard = (fs::path(trainer.tensorboard) / name).string();
      o.max_train_examples = size;
      o.warn_unusual = run_index++ == 0;  // the same settings for every run: said once
      const nlohmann::json settings = run_settings(t, o, kind);
      std::optional<RunRecord> done = trainer.overwrite ? std::nullopt : read_record(t.out);
      if (done && done->settings != settings)
        throw std::invalid_argument(fmt::format(
            "[learning curve] {} was measured with other settings ({} differ): run the curve into another --output-dir, or "
            "pass --overwrite to measure it again", record_path(t.out), changed_settings(done->settings, settings)));
      if (done) {
        say(fmt::format("{} examples, seed {}: measured before ({})", size_name(size), t.seed, record_path(t.out)));
      } else {
        // a run stopped part way (Ctrl-C, SIGTERM, a kill) goes on from its last checkpoint; one
        // stopped before its first, or being measured again, starts afresh in its own folder
        const bool stopped = !trainer.overwrite && fs::exists(t.out) && has_checkpoint(t.out);
        if (stopped) t.resume = t.out;
        else t.overwrite = t.overwrite || fs::exists(t.out);
        say(fmt::format("{} examples, seed {} ({} of {} sizes x {} seeds) {} {}", size_name(size), t.seed, i + 1,
                        sizes.size(), curve.seeds, stopped ? "resumed in" : "into", t.out));
        if (trainer.overwrite) fs::remove(record_path(t.out));
        const FinetuneResult r = run_finetuning(t, o, kind);
        if (r.run.signal != 0 || r.scores.is_null()) {  // Ctrl-C or SIGTERM: keep what was measured
          result.signal = r.run.signal;
          break;
        }
        done = RunRecord{r.train_pool, r.train_examples, r.scores, settings};
        write_record(t.out, *done);  // before the checkpoints go: a kill in between loses nothing
        if (!curve.keep_checkpoints) remove_checkpoints(t.out);
      }
      const bool first = pool == 0;
      pool = done->pool;
      if (first && size > pool) say_clamped(size);
      if (result.metrics.empty())
        for (const auto& [m, v] : done->scores.at("dev").items())
          if (v.is_number() && !is_count(m)) result.metrics.push_back(m);
      result.runs.push_back({done->examples, t.seed, done->scores});
      write_curve_files(out, result);  // after each run: a later failure or kill keeps what was measured
      say(fmt::format("{} examples, seed {}: dev {}", done->examples, t.seed, done->scores.at("dev").dump()));
    }
    if (result.signal != 0) break;
    trained.insert(result.runs.empty() ? 0 : result.runs.back().examples);
  }
  write_curve_files(out, result);
  return result;
}

}  // namespace xg::training
