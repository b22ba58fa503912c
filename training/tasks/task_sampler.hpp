#pragma once
// Which task each batch of multi-task fine-tuning comes from (training/tasks/multitask.hpp):
// - proportional: task i with probability n_i / sum(n), n_i its training examples (each example
//   is seen about equally often, as one shuffled pool of all tasks would);
// - temperature T: p_i proportional to n_i^(1/T) (XLM, T5, mT5): T = 1 is proportional, larger T
//   moves towards uniform, so small tasks are seen more often than their size alone gives;
// - round_robin: tasks in turn, 0, 1, ..., k-1, 0, ... (each the same number of batches).
// Draws are a pure function of the seed and the draw's number, so the state is one counter and a
// resumed run draws the same tasks next.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xg::training {

enum class Sampling { Proportional, Temperature, RoundRobin };

// "proportional", "temperature" or "round_robin"; throws naming --sampling and the value.
Sampling parse_sampling(const std::string& name);
std::string sampling_name(Sampling s);

// Each task's probability of being drawn (round-robin: 1/k each, its long-run share); throws for
// no tasks, a task without examples, or a temperature that is not positive.
std::vector<double> sampling_probabilities(const std::vector<size_t>& sizes, Sampling s, double temperature);

class TaskSampler {
 public:
  TaskSampler(const std::vector<size_t>& sizes, Sampling s, double temperature, uint64_t seed);
  // The index of the task the next batch comes from.
  size_t next();
  const std::vector<double>& probabilities() const { return p_; }
  uint64_t draws() const { return draws_; }
  nlohmann::json state() const { return {{"draws", draws_}}; }
  // Continues after the draws `state` counts; throws naming the state when it is not one.
  void restore(const nlohmann::json& state);

 private:
  Sampling sampling_;
  std::vector<double> p_, cumulative_;
  uint64_t seed_, draws_ = 0;
};

}  // namespace xg::training
