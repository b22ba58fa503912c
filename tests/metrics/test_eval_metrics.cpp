// Fine-tuning metrics against scikit-learn and scipy (tools/gen_metric_goldens.py ->
// tests/data/metric_goldens.json): random cases and the edge cases (one class only, a class never
// predicted, ties, constant inputs), and the errors for empty or mismatched inputs.
#include <catch2/catch.hpp>

#include <cmath>

#include "metrics/eval_metrics.hpp"
#include "tests/golden.hpp"

using namespace xg::metrics;
using Catch::Matchers::Contains;

TEST_CASE("classification metrics equal scikit-learn's", "[metrics]") {
  const nlohmann::json g = xg::test::load_golden("metric_goldens.json");
  for (const auto& [name, c] : g.at("labels").items()) {
    INFO(name);
    const Ids t = c.at("truth").get<Ids>(), p = c.at("predicted").get<Ids>();
    CHECK(accuracy(t, p) == Approx(c.at("accuracy").get<double>()).margin(1e-12));
    CHECK(f1_macro(t, p) == Approx(c.at("f1_macro").get<double>()).margin(1e-12));
    CHECK(f1_micro(t, p) == Approx(c.at("f1_micro").get<double>()).margin(1e-12));
    CHECK(matthews_corrcoef(t, p) == Approx(c.at("mcc").get<double>()).margin(1e-12));
    if (c.contains("f1_binary")) CHECK(f1_binary(t, p) == Approx(c.at("f1_binary").get<double>()).margin(1e-12));
  }
  CHECK(g.at("labels").size() >= 9);
  // sklearn: 0 for all-same labels, as the golden holds
  CHECK(matthews_corrcoef({1, 1, 1}, {1, 1, 1}) == 0.0);
}

TEST_CASE("correlations equal scipy's, ties ranked by their average", "[metrics]") {
  const nlohmann::json g = xg::test::load_golden("metric_goldens.json");
  for (const auto& [name, c] : g.at("values").items()) {
    INFO(name);
    const auto x = c.at("x").get<std::vector<double>>(), y = c.at("y").get<std::vector<double>>();
    CHECK(pearson(x, y) == Approx(c.at("pearson").get<double>()).margin(1e-12));
    CHECK(spearman(x, y) == Approx(c.at("spearman").get<double>()).margin(1e-12));
    const auto ranks = average_ranks(x);
    CHECK(ranks == c.at("ranks_x").get<std::vector<double>>());
  }
  CHECK(std::isnan(pearson({1, 1, 1}, {1, 2, 3})));  // constant input: scipy's NaN
}

TEST_CASE("metrics: empty and mismatched inputs are errors naming the metric", "[metrics][errors]") {
  CHECK_THROWS_WITH(accuracy({}, {}), Contains("[accuracy] no examples"));
  CHECK_THROWS_WITH(f1_macro({1, 0}, {1}), Contains("[f1] 2 true values but 1 predictions"));
  CHECK_THROWS_WITH(matthews_corrcoef({}, {}), Contains("[matthews_corrcoef] no examples"));
  CHECK_THROWS_WITH(pearson({}, {}), Contains("[pearson] no examples"));
  CHECK_THROWS_WITH(spearman({1.0}, {1.0, 2.0}), Contains("[spearman] 1 true values but 2"));
  CHECK_THROWS_WITH(f1_binary({0, 1, 2}, {0, 1, 2}), Contains("at most 2 classes"));
  CHECK_THROWS_WITH(f1_binary({0, 2}, {2, 0}), Contains("positive class 1"));
}
