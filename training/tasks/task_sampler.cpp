#include "training/tasks/task_sampler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace xg::training {

Sampling parse_sampling(const std::string& name) {
  if (name == "proportional") return Sampling::Proportional;
  if (name == "temperature") return Sampling::Temperature;
  if (name == "round_robin") return Sampling::RoundRobin;
  throw std::invalid_argument(fmt::format("[multitask] --sampling {}: use proportional, temperature or round_robin", name));
}

std::string sampling_name(Sampling s) {
  switch (s) {
    case Sampling::Proportional: return "proportional";
    case Sampling::Temperature: return "temperature";
    case Sampling::RoundRobin: return "round_robin";
  }
  return "?";
}

std::vector<double> sampling_probabilities(const std::vector<size_t>& sizes, Sampling s, double temperature) {
  if (sizes.empty()) throw std::invalid_argument("[multitask] no tasks to sample from");
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] == 0) throw std::invalid_argument(fmt::format("[multitask] task {} has no training examples", i));
  if (s == Sampling::Temperature && !(temperature > 0 && std::isfinite(temperature)))
    throw std::invalid_argument(fmt::format("[multitask] --sampling-temperature {}: must be positive", temperature));
  // Temperature: n^(1/T) taken relative to the largest, exp((log n - log max) / T), so a small T
  // gives the largest tasks all the weight instead of inf / inf.
  const double log_max = std::log(double(*std::max_element(sizes.begin(), sizes.end())));
  std::vector<double> w;
  for (size_t n : sizes)
    w.push_back(s == Sampling::RoundRobin    ? 1.0
                : s == Sampling::Temperature ? std::exp((std::log(double(n)) - log_max) / temperature)
                                             : double(n));
  double sum = 0;
  for (double x : w) sum += x;
  for (double& x : w) x /= sum;
  return w;
}

TaskSampler::TaskSampler(const std::vector<size_t>& sizes, Sampling s, double temperature, uint64_t seed)
    : sampling_(s), p_(sampling_probabilities(sizes, s, temperature)), seed_(seed) {
  double c = 0;
  for (double p : p_) cumulative_.push_back(c += p);
  cumulative_.back() = 1.0;  // no rounding gap above the last task
}

namespace {
// splitmix64: a well-mixed 64-bit value from a counter (each draw its own, so state is a count)
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
}  // namespace

size_t TaskSampler::next() {
  const uint64_t draw = draws_++;
  if (sampling_ == Sampling::RoundRobin) return size_t(draw % p_.size());
  const double u = double(mix(mix(seed_) ^ draw) >> 11) * 0x1.0p-53;  // uniform in [0, 1)
  return size_t(std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin());
}

void TaskSampler::restore(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("draws") || !state.at("draws").is_number_unsigned())
    throw std::runtime_error(fmt::format("[multitask] bad sampler state {}: want {{\"draws\": N}}", state.dump()));
  draws_ = state.at("draws").get<uint64_t>();
}

}  // namespace xg::training
