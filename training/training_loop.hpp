#pragma once
// The Trainer's loop, once the run is set up (training/trainer.hpp): optimizer steps over the
// task's batches (gradient accumulation, the all-reduce under mpirun, the non-finite guard,
// clipping and the schedule), with everything around them left to callbacks
// (training/trainer_callbacks.hpp): logging, evaluation, checkpoints, stopping.
#include <functional>
#include <string>
#include <vector>

#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"
#include "training/distributed.hpp"
#include "training/task.hpp"
#include "training/trainer_callbacks.hpp"

namespace xg::training {

class GradientSync;
struct TrainerOptions;

struct TrainingLoop {
  const TrainerOptions& opt;
  Task& task;
  optim::Optimizer& optimizer;
  const optim::LrSchedule& schedule;
  Communicator& comm;
  GradientSync* sync = nullptr;  // under mpirun: the gradients' all-reduce
  std::vector<TrainerCallback*> callbacks;
  // Writes the checkpoint of `step` (rank 0; the others only name it) and returns its directory.
  std::function<std::string(int64_t step, bool stopped_early)> save;
  // Called once, after the first step: what is in --out is worth keeping from then on.
  std::function<void()> first_step_made;

  // Steps from `step` to --steps or a stop; `checkpoint` is the one the run resumed from (empty:
  // a fresh run). Returns the final state (step, and why it ended).
  LoopState run(int64_t step, const std::string& checkpoint);
};

}  // namespace xg::training
