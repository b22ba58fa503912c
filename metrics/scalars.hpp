#pragma once
// Named metric values in the order they were produced ("loss", "lr", "eval_accuracy", "exact",
// ...): what evaluations return and what the training loop logs.
#include <string>
#include <utility>
#include <vector>

namespace xg::metrics {

using Scalars = std::vector<std::pair<std::string, double>>;

}  // namespace xg::metrics
