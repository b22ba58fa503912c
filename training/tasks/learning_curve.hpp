#pragma once
// bert_finetune --learning-curve: the dev scores of fine-tuning on growing seeded samples of the
// training set (--max-train-examples N), each size with several seeds, for any --task kind; the
// runs as rows, a per-size summary (mean and sample standard deviation), CSV and JSON.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "training/tasks/finetuning.hpp"
#include "training/trainer.hpp"

namespace xg::training {

// "50,100,all" as training-set sizes, 0 standing for all; throws naming --learning-curve and the
// value for an empty list, a size that is neither a positive integer nor "all", or one given twice.
std::vector<size_t> parse_curve_sizes(const std::string& list);

struct CurveOptions {
  std::vector<size_t> sizes;      // examples to train on; 0: the whole training set
  size_t seeds = 3;               // runs per size, seeded --seed, --seed + 1, ...
  bool keep_checkpoints = false;  // else each run's checkpoints are deleted once it is scored
};

// One fine-tuning run of a curve.
struct CurveRun {
  size_t examples = 0;    // trained on
  uint64_t seed = 0;
  nlohmann::json scores;  // run_finetuning's {"dev": {...}, "test": {...}}
};

// One size's runs summed up.
struct CurvePoint {
  size_t examples = 0;
  size_t runs = 0;
  std::vector<double> mean, std;  // per metric (LearningCurve::metrics); std: sample (n - 1), NaN for one run
};

struct LearningCurve {
  std::vector<std::string> metrics;  // the dev scores that are metrics (counts such as "examples" left out)
  std::vector<CurveRun> runs;        // by size, then seed
  int signal = 0;                    // SIGINT or SIGTERM that stopped a run: the curve is partial

  std::vector<CurvePoint> summary() const;
  std::string rows_csv() const;       // examples,seed,dev_<metric>...
  std::string summary_csv() const;    // examples,runs,dev_<metric>_mean,dev_<metric>_std...
  std::string summary_table() const;  // for people: mean ± std per size
  nlohmann::json to_json() const;     // {"runs": [...], "summary": [...]}
};

// Fine-tunes per `trainer`, `task` and `kind` once per size and seed, each run into
// OUT/curve/n<N>-seed<S> (OUT: --out, else the program's default), smallest size first; a size
// above the training set's is clamped to all of it (said once), and a size that comes to one
// already run is skipped. Writes OUT/learning_curve.csv and OUT/learning_curve_summary.csv.
// One process only: refused under mpirun.
LearningCurve run_learning_curve(const TrainerOptions& trainer, const FinetuneOptions& task, FinetuneKind& kind,
                                 const CurveOptions& curve);

}  // namespace xg::training
