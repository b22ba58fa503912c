#pragma once
// The Trainer, for any Task: gradient accumulation, clipping, the learning-rate schedule,
// evaluation every N steps, checkpoints (atomic, the newest --keep kept) with exact resume (model,
// optimizer state, the saved schedule, RNG, data position), Ctrl-C and SIGTERM (save and stop),
// a guard against non-finite losses and gradients, one run per locked --out directory, progress
// (step, loss and its parts, lr, tokens/s, ETA) and metrics sinks. This file sets a run up; the
// loop is training/training_loop.hpp, and what happens around its steps is callbacks
// (training/trainer_callbacks.hpp, the Trainer's own in training/builtin_callbacks.hpp).
//
// Resume policy: the options that shape the data or the updates (OnResume::Restore: batch,
// accumulation, lr, warm-up, steps, schedule, optimizer, ... and the task's) are saved with each
// checkpoint and a resumed run takes them from it; the schedule is the one saved in the training
// state, followed as saved. Setting such an option to another value for the resumed run is
// refused, naming the flag: a resumed run continues the same run, bit for bit.
//
// Data parallelism: started by mpirun, each rank runs this loop on its own part of each global
// batch (--batch per rank; training/data_parallel.hpp), gradients are all-reduced in buckets while
// backward runs (training/grad_sync.hpp), and rank 0 alone writes checkpoints, logs and metrics.
// The settings are compared across ranks at the start, the weights every --check-every steps, and
// a stop (signal, --stop-at, non-finite values) is decided by all ranks together.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/precision.hpp"
#include "training/checkpoints.hpp"
#include "training/metric_sinks.hpp"
#include "training/task.hpp"
#include "training/trainer_callbacks.hpp"
#include "util/options.hpp"

namespace xg::training {

class OutputDirectory;

struct TrainerOptions : ResumableOptions {
  // what shapes the updates (restored on resume)
  size_t batch = 16;       // examples per micro-batch (of each rank)
  size_t grad_accum = 1;   // micro-batches per optimizer step
  float lr = 1e-3f;
  int64_t warmup = -1;     // steps; -1: 10% of the run (or --warmup-ratio)
  float warmup_ratio = -1; // >= 0: warm-up as this fraction of the run's steps, instead of --warmup
  int64_t steps = 800;     // optimizer steps in the whole run
  size_t epochs = 0;       // > 0: derive steps from passes over the training data
  int64_t min_steps = 0;   // with epochs: at least this many steps (a small set gives few steps per epoch)
  std::string schedule = "linear";
  std::string optimizer = "auto";  // auto: the task's recipe (LAMB for ALBERT, else AdamW)
  float weight_decay = 0.01f;
  float beta2 = 0;         // the optimizer's second-moment decay; 0: the task's recipe (Task::optimizer_defaults)
  float eps = 0;           // the optimizer's epsilon; 0: the task's recipe
  float clip = 1.0f;       // global gradient norm; 0 disables
  uint64_t seed = 42;
  std::string precision = "fp32";  // fp32, or bf16: linear layers' GEMMs in bf16 (autograd/precision.hpp)
  bool padding_free = false;  // encoder layers on real tokens only (nn::ExecutionOptions::padding_free)
  // run control (each run's own values)
  std::string out;           // empty: the resumed run's directory, or default_out for a new run
  bool overwrite = false;   // a new run may replace the files of an earlier run in --out
  std::string resume;       // checkpoint directory, or an --out directory (its newest checkpoint)
  std::string tensorboard;  // directory for TensorBoard event files; empty: none
  int64_t eval_every = 200;
  int64_t save_every = 200;
  int64_t stop_at = -1;     // stop (saving a checkpoint) after this step, as an interruption would
  size_t keep_checkpoints = 2;
  int64_t log_every = 10;   // plain log lines when not on a terminal; metrics rows
  int threads = 0;          // 0: XGRAD_NUM_THREADS or all cores
  bool detect_anomaly = false;  // name the op that made the first NaN/Inf (slow)
  std::string on_nonfinite = "stop";  // a NaN/Inf loss or gradient: "stop" (no update made) or "skip" the update
  int64_t check_every = 100;  // data-parallel runs: compare the ranks' weights every N steps (0: never)
  size_t bucket_mb = 25;     // data-parallel runs: gradient all-reduce bucket size
  double collective_timeout = 1800;  // data-parallel runs: the watchdog's limit on one collective, seconds (0: none)
  bool quiet = false;       // no output (tests); not a flag

  std::string default_out = "runs/bert_pretrain";  // a new run's --out when none is given: runs/<program>; not a flag
  static const OptionTable<TrainerOptions>& table();
};

// The matmul precision --precision names; throws naming the flag and value otherwise.
MatmulPrecision training_precision(const TrainerOptions& opt);
// The precision a run trains (and so scores) at: --precision, or on --resume the one saved with
// the checkpoint (a resumed run keeps it).
MatmulPrecision run_precision(const TrainerOptions& opt);

// --steps (--max-steps) given on a new run's command line overrides --epochs, as transformers'
// max_steps overrides num_train_epochs; a resumed run keeps its plan. Returns a note to print when
// both were given.
std::optional<std::string> steps_override_epochs(TrainerOptions& t, bool steps_given, bool epochs_given);

// Refuses, before allocating, a training step of `config` that needs far more memory than this
// machine has (models::training_memory), naming --per-device-train-batch-size and
// --max-seq-length; `batch` 0: the model alone.
void refuse_if_too_big_to_train(const nlohmann::json& config, size_t batch, size_t seq_len, size_t max_predictions = 0,
                                bool checkpoint_activations = false);

// --padding-free on `model` (its execution and its sub-modules'), or'ed with what it had.
void set_padding_free(nn::Module& model, bool padding_free);

// --optimizer (auto: the recipe's, else AdamW) over `groups`, with --beta2 and --eps when set,
// else the recipe's, else the optimizer's own defaults.
std::unique_ptr<optim::Optimizer> make_optimizer(const TrainerOptions& o, std::vector<optim::ParamGroup> groups,
                                                 const OptimizerDefaults& recipe);

// How a run ended.
struct RunResult {
  int64_t step = 0;  // the step reached
  int signal = 0;    // SIGINT, SIGTERM, SIGUSR1 or SIGUSR2 that stopped it (after saving a checkpoint); 0: it was not
  std::string out;   // the directory it wrote into: --out, else the resumed run's
};

class Trainer {
 public:
  // `task_options` are the task's settings bound to the struct `make_task` reads: on resume they
  // are restored from the checkpoint before the task is built.
  Trainer(TrainerOptions options, BoundOptions task_options, TaskFactory make_task);
  // Trains to options.steps, or until --stop-at, or SIGINT/SIGTERM (both save a checkpoint and
  // stop). Throws when the run cannot start, or at a non-finite loss or gradient (by default).
  RunResult run();
  // Adds a callback to the loop (training/trainer_callbacks.hpp), run after the Trainer's own and
  // the ones added before it, on every rank.
  void add_callback(std::shared_ptr<TrainerCallback> callback) { callbacks_.push_back(std::move(callback)); }

 private:
  // The run after its --out directory is taken: `started` turns true once a step was made.
  // `out_dir`: rank 0's (null on the others), told when the first step is made.
  RunResult train(const std::string& checkpoint, const TrainingState& state, bool& started, OutputDirectory* out_dir);
  RunResult run_on_this_rank();

  TrainerOptions opt_;
  BoundOptions task_options_;
  TaskFactory make_task_;
  std::vector<std::shared_ptr<TrainerCallback>> callbacks_;
};

}  // namespace xg::training
