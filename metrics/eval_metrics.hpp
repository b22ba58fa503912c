#pragma once
// Evaluation metrics of fine-tuning, equal to scikit-learn's and scipy's (checked against their
// goldens, tools/gen_metric_goldens.py): accuracy, F1 (binary, macro, micro), Matthews
// correlation, Pearson and Spearman. Every function throws std::invalid_argument for empty
// inputs or inputs of different lengths, naming the metric.
#include <cstdint>
#include <vector>

namespace xg::metrics {

using Ids = std::vector<int64_t>;

// Fraction of predictions equal to the truth.
double accuracy(const Ids& truth, const Ids& predicted);
// F1 of the class `positive` (sklearn average="binary"); 0 when it is never true nor predicted
// (sklearn's zero_division default).
double f1_binary(const Ids& truth, const Ids& predicted, int64_t positive = 1);
// Unweighted mean of each class's F1 over the classes in truth or predictions (sklearn "macro").
double f1_macro(const Ids& truth, const Ids& predicted);
// F1 of the pooled counts (sklearn "micro"); equal to accuracy for single-label predictions.
double f1_micro(const Ids& truth, const Ids& predicted);
// Matthews correlation for any number of classes (sklearn's multiclass form); 0 when truth or
// predictions hold one class only.
double matthews_corrcoef(const Ids& truth, const Ids& predicted);

// Pearson's r; NaN when either input is constant (as scipy.stats.pearsonr).
double pearson(const std::vector<double>& x, const std::vector<double>& y);
// Spearman's rho: Pearson's r of the ranks, tied values getting their average rank.
double spearman(const std::vector<double>& x, const std::vector<double>& y);
// 1-based ranks, ties averaged (scipy.stats.rankdata "average").
std::vector<double> average_ranks(const std::vector<double>& x);

}  // namespace xg::metrics
