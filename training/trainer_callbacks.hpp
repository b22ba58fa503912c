#pragma once
// Hooks into the Trainer's loop, as transformers' TrainerCallback: the loop makes optimizer steps;
// what happens around them (the log cadence, progress, metrics rows, evaluation's cadence, stop
// signals, --stop-at) is callbacks that read the loop's state and ask for a log row, an
// evaluation, a checkpoint or a stop through LoopControl. The Trainer runs its own
// (training/builtin_callbacks.hpp) first, then those given to Trainer::add_callback, in order.
//
// Under mpirun every rank runs every callback; only rank 0 evaluates, logs rows and saves. A stop a
// callback asks for on one rank stops every rank (the loop agrees on it after each step).
#include <cstdint>
#include <string>

#include "training/task.hpp"

namespace xg::training {

struct LossWindow;

// What the loop knows after an optimizer step.
struct LoopState {
  int64_t step = 0;        // optimizer steps made, this one included
  int64_t first_step = 0;  // where this run started (a resumed run: its checkpoint's step)
  int64_t max_steps = 0;   // --steps
  float lr = 0;            // the learning rate of this step
  bool updated = true;     // false: the update was skipped (a non-finite loss or gradient, --on-nonfinite skip)
  int rank = 0;            // this process's rank (0 without mpirun)
  const LossWindow* window = nullptr;  // the updated steps since the last log row
  const Task* task = nullptr;
  std::string last_checkpoint;  // the newest checkpoint written; empty: none yet
  // At the end (on_train_end): why the run ended.
  int signal = 0;          // the stop signal that ended it (SIGINT, SIGTERM, SIGUSR1, SIGUSR2); 0: none
  bool stopped = false;    // stopped before --steps: a signal, --stop-at or a callback
  bool converged = false;  // the task asked to stop (early stopping)
};

// What callbacks ask of the loop after a step (transformers' TrainerControl). The loop logs and
// evaluates on rank 0 only; it also saves at the last step and whenever the run stops.
struct LoopControl {
  bool log = false;       // write a log row of the window (when it holds an updated step)
  bool evaluate = false;  // evaluate the task
  bool save = false;      // write a checkpoint
  bool stop = false;      // stop after this step, with a checkpoint, as an interruption would
  int signal = 0;         // a stop signal received (SIGINT, ...): stop, naming it
};

class TrainerCallback {
 public:
  virtual ~TrainerCallback() = default;
  // Before the first step of this run (after setup: model, optimizer and a resumed state loaded).
  virtual void on_train_begin(const LoopState& state) {}
  // After each optimizer step (made or skipped).
  virtual void on_step_end(const LoopState& state, LoopControl& control) {}
  // A row of training metrics (loss, its parts, the task's metrics, lr, tokens/s, elapsed) on rank 0.
  virtual void on_log(const LoopState& state, const Scalars& row) {}
  // The task's evaluation on rank 0; `control.stop` may end the run after it.
  virtual void on_evaluate(const LoopState& state, const Evaluation& evaluation, LoopControl& control) {}
  // A checkpoint was written (by rank 0) into `dir`.
  virtual void on_save(const LoopState& state, const std::string& dir) {}
  // The loop ended: at --steps, stopped or converged (see LoopState).
  virtual void on_train_end(const LoopState& state) {}
  // A note from the loop for people (a skipped update).
  virtual void on_message(const LoopState& state, const std::string& text) {}
};

}  // namespace xg::training
