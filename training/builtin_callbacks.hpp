#pragma once
// The Trainer's own callbacks (training/trainer_callbacks.hpp), each one concern of the loop.
#include <array>
#include <csignal>
#include <memory>
#include <vector>

#include "training/metric_sinks.hpp"
#include "training/trainer_callbacks.hpp"
#include "util/progress.hpp"

namespace xg::nn {
class ParameterArena;
}

namespace xg::training {

class Communicator;

// When to log (--log-every and the last step), evaluate (--eval-every and the last step), save
// (--save-every and the last step) and stop (--stop-at).
class StepCadence : public TrainerCallback {
 public:
  StepCadence(int64_t log_every, int64_t eval_every, int64_t save_every, int64_t stop_at)
      : log_every_(log_every), eval_every_(eval_every), save_every_(save_every), stop_at_(stop_at) {}
  void on_step_end(const LoopState& state, LoopControl& control) override;

 private:
  int64_t log_every_, eval_every_, save_every_, stop_at_;
};

// SIGINT and SIGTERM (Ctrl-C; `timeout`, container stops, Slurm pre-emption), SIGUSR1 and SIGUSR2
// (Open MPI's mpirun passes those on to the ranks and nothing more, while after passing SIGINT or
// SIGTERM on it kills the ranks a second later, often before rank 0 has saved) stop the run after
// the current step, with a checkpoint. The handlers are installed for this object's lifetime.
class StopOnSignals : public TrainerCallback {
 public:
  StopOnSignals();
  ~StopOnSignals() override;
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;
  void on_step_end(const LoopState& state, LoopControl& control) override;

 private:
  static constexpr std::array<int, 4> kSignals{SIGINT, SIGTERM, SIGUSR1, SIGUSR2};
  using Handler = void (*)(int);
  std::array<Handler, 4> previous_{};
};

// Progress for people on stdout and stderr: on a terminal a bar redrawn in place (step, loss and
// its parts, lr, tokens/s, ETA), otherwise a line per log row; evaluations, notes, and how the run
// ended with the way to resume it. Silent when `quiet`.
class ConsoleProgress : public TrainerCallback {
 public:
  ConsoleProgress(int64_t max_steps, bool quiet);
  void on_step_end(const LoopState& state, LoopControl& control) override;
  void on_log(const LoopState& state, const Scalars& row) override;
  void on_evaluate(const LoopState& state, const Evaluation& evaluation, LoopControl& control) override;
  void on_message(const LoopState& state, const std::string& text) override;
  void on_train_end(const LoopState& state) override;

 private:
  void say(const std::string& text);
  std::string status(const LoopState& state) const;
  bool quiet_, tty_;
  Progress progress_;
};

// Log rows and evaluations (as "eval_<name>") into the run's metrics sinks: metrics.jsonl,
// TensorBoard.
class MetricsLogging : public TrainerCallback {
 public:
  explicit MetricsLogging(std::vector<std::unique_ptr<MetricsSink>> sinks) : sinks_(std::move(sinks)) {}
  void on_log(const LoopState& state, const Scalars& row) override;
  void on_evaluate(const LoopState& state, const Evaluation& evaluation, LoopControl& control) override;

 private:
  std::vector<std::unique_ptr<MetricsSink>> sinks_;
};

// Data-parallel runs: the ranks' weights compared every `every` steps and at the last one
// (training/rank_checks.hpp), stopping every rank if they differ.
class RankWeightCheck : public TrainerCallback {
 public:
  RankWeightCheck(Communicator& comm, const nn::ParameterArena& arena, int64_t every) : comm_(comm), arena_(arena), every_(every) {}
  void on_step_end(const LoopState& state, LoopControl& control) override;

 private:
  Communicator& comm_;
  const nn::ParameterArena& arena_;
  int64_t every_;
};

}  // namespace xg::training
