#include "training/run_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace xg::training {

std::string finetune_summary(const nlohmann::json& scores, const std::string& best_dir, double seconds,
                             const std::string& use_command) {
  std::vector<std::string> metrics;  // every split's, in first-seen order, the example count last
  for (const auto& [split, values] : scores.items())
    for (const auto& [name, v] : values.items())
      if (values.is_object())
        if (name != "examples" && std::find(metrics.begin(), metrics.end(), name) == metrics.end()) metrics.push_back(name);
  metrics.push_back("examples");
  // "precision": the matmul precision the scores were taken at (bert_finetune --score-precision)
  const std::string precision = scores.contains("precision") && scores["precision"].is_string()
                                    ? fmt::format(", at {}", scores["precision"].get<std::string>())
                                    : "";
  std::string out = fmt::format("final scores of the best model ({}{}):\n  {:<6}", best_dir, precision, "");
  for (const auto& m : metrics) out += fmt::format(" {:>10}", m);
  out += "\n";
  for (const auto& [split, values] : scores.items()) {
    if (!values.is_object()) continue;
    out += fmt::format("  {:<6}", split);
    for (const auto& m : metrics) {
      if (!values.contains(m) || !values[m].is_number()) out += fmt::format(" {:>10}", "-");
      else if (m == "examples") out += fmt::format(" {:>10.0f}", values[m].get<double>());
      else out += fmt::format(" {:>10.4f}", values[m].get<double>());
    }
    out += "\n";
  }
  out += fmt::format("took {:.1f} s{}\n", seconds, use_command.empty() ? "" : fmt::format("; use it: {}", use_command));
  return out;
}

}  // namespace xg::training
