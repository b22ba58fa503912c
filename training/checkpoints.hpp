#pragma once
// Training checkpoints on disk: the checkpoint-NNNNNN directories of a run, and the training
// state saved in each beside the model (training_state.json).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/core/checkpoint.hpp"
#include "optim/schedule.hpp"
#include "util/random.hpp"

namespace xg::training {

std::string checkpoint_name(int64_t step);  // "checkpoint-000042"
using models::checkpoint_step;   // models/core/checkpoint.hpp
using models::list_checkpoints;

// Removes a checkpoint directory: renamed to DIR.del.PID, then deleted.
void remove_checkpoint(const std::string& dir);

// After the save of step `saved_step`: removes all but the newest `keep` (at least one) of the
// checkpoints of `out_dir` numbered up to `saved_step`. Higher-numbered ones are left alone, so the
// checkpoint just saved is never among those removed.
void prune_checkpoints(const std::string& out_dir, size_t keep, int64_t saved_step);

// A checkpoint directory, or the newest checkpoint-* with a training state inside an --out
// directory. Throws naming `path` when there is none.
std::string resolve_checkpoint(const std::string& path);
// Whether the --out directory `out_dir` holds a checkpoint with a training state (a run to resume).
bool has_checkpoint(const std::string& out_dir);

// Everything besides the model and optimizer files that a resumed run needs to continue exactly.
struct TrainingState {
  int64_t step = 0;
  Generator::State rng{};      // the default generator (dropout)
  optim::LrSchedule schedule;  // followed by a resumed run as saved
  nlohmann::json options;      // the Restore options of the Trainer and the task, by json key
  nlohmann::json data;         // the task's data position
  std::string task;            // empty in checkpoints written before tasks existed
  int world_size = 1;          // ranks of the data-parallel run that wrote it
  bool stopped_early = false;  // the task asked the run to stop here (--patience): a resume has nothing to do

  // Reads `checkpoint_dir`/training_state.json. A state written before the Trainer existed (data
  // position as data_epoch/data_index, no task name) reads as its equivalent. Throws naming the
  // file and what is missing or malformed.
  static TrainingState read(const std::string& checkpoint_dir);
  // Writes `dir`/training_state.json atomically.
  void write(const std::string& dir) const;
};

}  // namespace xg::training
