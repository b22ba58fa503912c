#include "metrics/eval_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

namespace xg::metrics {

namespace {
template <class A, class B>
void check_sizes(const A& a, const B& b, const char* metric) {
  if (a.empty()) throw std::invalid_argument(fmt::format("[{}] no examples to score", metric));
  if (a.size() != b.size())
    throw std::invalid_argument(fmt::format("[{}] {} true values but {} predictions", metric, a.size(), b.size()));
}

// Per class: true positives, predicted count, true count.
struct ClassCounts {
  double tp = 0, predicted = 0, actual = 0;
  double f1() const {
    const double denominator = predicted + actual;  // 2tp / (2tp + fp + fn)
    return denominator == 0 ? 0.0 : 2 * tp / denominator;
  }
};

std::map<int64_t, ClassCounts> count_classes(const Ids& truth, const Ids& predicted) {
  std::map<int64_t, ClassCounts> c;
  for (size_t i = 0; i < truth.size(); ++i) {
    c[truth[i]].actual += 1;
    c[predicted[i]].predicted += 1;
    if (truth[i] == predicted[i]) c[truth[i]].tp += 1;
  }
  return c;
}
}  // namespace

double accuracy(const Ids& truth, const Ids& predicted) {
  check_sizes(truth, predicted, "accuracy");
  size_t right = 0;
  for (size_t i = 0; i < truth.size(); ++i) right += truth[i] == predicted[i];
  return double(right) / double(truth.size());
}

double f1_binary(const Ids& truth, const Ids& predicted, int64_t positive) {
  check_sizes(truth, predicted, "f1");
  const auto c = count_classes(truth, predicted);
  if (c.size() > 2)
    throw std::invalid_argument(fmt::format("[f1] binary F1 needs at most 2 classes, got {} (use macro or micro)", c.size()));
  const auto it = c.find(positive);
  if (it == c.end() && c.size() == 2)
    throw std::invalid_argument(fmt::format("[f1] the positive class {} is neither true nor predicted, but 2 others are", positive));
  return it == c.end() ? 0.0 : it->second.f1();
}

double f1_macro(const Ids& truth, const Ids& predicted) {
  check_sizes(truth, predicted, "f1");
  const auto c = count_classes(truth, predicted);
  double sum = 0;
  for (const auto& [_, k] : c) sum += k.f1();
  return sum / double(c.size());
}

double f1_micro(const Ids& truth, const Ids& predicted) {
  check_sizes(truth, predicted, "f1");
  ClassCounts pooled;
  for (const auto& [_, k] : count_classes(truth, predicted)) {
    pooled.tp += k.tp;
    pooled.predicted += k.predicted;
    pooled.actual += k.actual;
  }
  return pooled.f1();
}

double matthews_corrcoef(const Ids& truth, const Ids& predicted) {
  check_sizes(truth, predicted, "matthews_corrcoef");
  const auto c = count_classes(truth, predicted);
  const double n = double(truth.size());
  double correct = 0, t_dot_p = 0, p_dot_p = 0, t_dot_t = 0;
  for (const auto& [_, k] : c) {
    correct += k.tp;
    t_dot_p += k.actual * k.predicted;
    p_dot_p += k.predicted * k.predicted;
    t_dot_t += k.actual * k.actual;
  }
  const double cov_tp = correct * n - t_dot_p, cov_pp = n * n - p_dot_p, cov_tt = n * n - t_dot_t;
  if (cov_pp * cov_tt == 0) return 0.0;  // one class only on a side: sklearn's 0
  return cov_tp / std::sqrt(cov_tt * cov_pp);
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  check_sizes(x, y, "pearson");
  const double n = double(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n, my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0 || syy == 0) return std::numeric_limits<double>::quiet_NaN();
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

std::vector<double> average_ranks(const std::vector<double>& x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
    const double rank = double(i + j) / 2.0 + 1.0;  // positions i..j share their mean, 1-based
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  check_sizes(x, y, "spearman");
  return pearson(average_ranks(x), average_ranks(y));
}

}  // namespace xg::metrics
