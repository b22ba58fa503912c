#include "training/run_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace xg::training {

std::string scores_table(const nlohmann::json& scores) {
  std::vector<std::string> metrics;  // every split's, in first-seen order, the example count last
  size_t width = 6;                  // of the split column
  for (const auto& [split, values] : scores.items()) {
    if (!values.is_object()) continue;
    width = std::max(width, split.size());
    for (const auto& [name, v] : values.items())
      if (name != "examples" && std::find(metrics.begin(), metrics.end(), name) == metrics.end()) metrics.push_back(name);
  }
  metrics.push_back("examples");
  std::string out = fmt::format("  {:<{}}", "", width);
  for (const auto& m : metrics) out += fmt::format(" {:>10}", m);
  out += "\n";
  for (const auto& [split, values] : scores.items()) {
    if (!values.is_object()) continue;
    out += fmt::format("  {:<{}}", split, width);
    for (const auto& m : metrics) {
      if (!values.contains(m) || !values[m].is_number()) out += fmt::format(" {:>10}", "-");
      else if (m == "examples") out += fmt::format(" {:>10.0f}", values[m].get<double>());
      else out += fmt::format(" {:>10.4f}", values[m].get<double>());
    }
    out += "\n";
  }
  return out;
}

std::string finetune_summary(const nlohmann::json& scores, const std::string& best_dir, double seconds,
                             const std::string& use_command) {
  // "precision": the matmul precision the scores were taken at (bert_finetune --score-precision)
  const std::string precision = scores.contains("precision") && scores["precision"].is_string()
                                    ? fmt::format(", at {}", scores["precision"].get<std::string>())
                                    : "";
  return fmt::format("final scores of the best model ({}{}):\n{}took {:.1f} s{}\n", best_dir, precision, scores_table(scores),
                     seconds, use_command.empty() ? "" : fmt::format("; use it: {}", use_command));
}

std::string multitask_summary(const nlohmann::json& scores, const std::string& out_dir, double seconds) {
  std::string out;
  for (const auto& [task, s] : scores.items())
    out += fmt::format("final dev scores of task {} (dev: its best model, {}/tasks/{}/best; dev_at_best_mean: in the best "
                       "model by the mean, {}/best):\n{}", task, out_dir, task, out_dir, scores_table(s));
  return out + fmt::format("took {:.1f} s\n", seconds);
}

}  // namespace xg::training
