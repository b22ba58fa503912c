#pragma once
// What the optimizer steps since the last log row add up to: the loss and its parts, the task's
// counts, tokens and time; the Trainer's log lines and metrics rows read it.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "training/task.hpp"

namespace xg::training {

struct LossWindow {
  int64_t steps = 0;
  double loss = 0, tokens = 0;
  Scalars parts;  // summed, in the task's order
  Counts counts;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  // One micro-batch of `micro_batches` in a step: its losses count 1 / micro_batches.
  void add(const BatchLoss& b, size_t micro_batches);
  // The micro-batches of one step, added up in `step` (its `steps` not counted).
  void add_step(const LossWindow& step);
  void add_parts(const Scalars& more, double weight);
  double seconds() const;
  double tokens_per_s() const;
  // "loss 2.3456 (mlm 2.1000, nsp 0.2456)"
  std::string loss_text() const;
  // "loss", each part as "<part>_loss", then the task's metrics of the counts.
  Scalars scalars(const Task& task) const;
};

}  // namespace xg::training
