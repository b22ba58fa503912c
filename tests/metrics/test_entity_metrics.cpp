// Entity-level metrics against seqeval 1.2.2 (tools/gen_seqeval_goldens.py ->
// tests/data/seqeval_goldens.json): default mode and strict IOB2, on random sequences and on the
// edge cases (no predicted entity, no true entity, none at all, I- without B-, a type change
// mid-entity, BIOES, entities at sentence edges); the per-type report and its three averages.
#include <catch2/catch.hpp>

#include <cmath>

#include "metrics/entity_metrics.hpp"
#include "tests/golden.hpp"

using namespace xg::metrics;
using Catch::Matchers::Contains;

namespace {
void check_scores(const EntityScores& s, const nlohmann::json& g) {
  for (const auto& [field, value] : {std::pair{"precision", s.precision}, {"recall", s.recall}, {"f1", s.f1}}) {
    INFO(field);
    if (g.at(field).is_null()) CHECK(std::isnan(value));  // seqeval's NaN macro average over no type
    else CHECK(value == Approx(g.at(field).get<double>()).margin(1e-12));
  }
  if (g.contains("support")) CHECK(s.support == g.at("support").get<size_t>());
}

void check_report(const EntityReport& r, const nlohmann::json& g) {
  check_scores(r.micro, g.at("micro"));
  check_scores(r.micro, g.at("micro_avg"));
  check_scores(r.macro, g.at("macro_avg"));
  check_scores(r.weighted, g.at("weighted_avg"));
  REQUIRE(r.types.size() == g.at("types").size());
  for (const auto& [type, scores] : g.at("types").items()) {
    INFO(type);
    REQUIRE(r.types.count(type) == 1);
    check_scores(r.types.at(type), scores);
  }
}
}  // namespace

TEST_CASE("entity metrics equal seqeval's, default and strict IOB2", "[metrics][seqeval]") {
  const nlohmann::json g = xg::test::load_golden("seqeval_goldens.json");
  size_t strict = 0;
  for (const auto& [name, c] : g.at("cases").items()) {
    INFO(name);
    const auto t = c.at("truth").get<TagSequences>(), p = c.at("predicted").get<TagSequences>();
    check_report(entity_report(t, p), c.at("default"));
    if (c.contains("strict_iob2")) {
      check_report(entity_report(t, p, EntityMode::StrictIOB2), c.at("strict_iob2"));
      ++strict;
    }
  }
  CHECK(g.at("cases").size() >= 16);
  CHECK(strict >= 12);
}

TEST_CASE("entity metrics: entities as each mode reads them", "[metrics][seqeval]") {
  const TagSequences tags{{"O", "I-PER", "I-PER", "B-PER", "I-LOC", "O"}, {"B-ORG", "I-ORG"}};
  CHECK(extract_entities(tags) == std::vector<Entity>{{"PER", 0, 1, 3}, {"PER", 0, 3, 4}, {"LOC", 0, 4, 5}, {"ORG", 1, 0, 2}});
  CHECK(extract_entities(tags, EntityMode::StrictIOB2) == std::vector<Entity>{{"PER", 0, 3, 4}, {"ORG", 1, 0, 2}});
  CHECK(extract_entities({{"B-PER", "E-PER", "S-LOC"}}) == std::vector<Entity>{{"PER", 0, 0, 2}, {"LOC", 0, 2, 3}});
}

TEST_CASE("entity metrics: errors name the sentence, position and tag", "[metrics][seqeval]") {
  CHECK_THROWS_WITH(entity_report({{"O"}}, {{"O"}, {"O"}}), Contains("[seqeval] 1 true sequences but 2 predicted"));
  CHECK_THROWS_WITH(entity_report({{"O", "O"}}, {{"O"}}), Contains("[seqeval] sentence 0: 2 true tags but 1 predicted"));
  CHECK_THROWS_WITH(entity_report({{"O", "X-PER"}}, {{"O", "O"}}), Contains("[seqeval] sentence 0, position 1: tag 'X-PER'"));
  CHECK_THROWS_WITH(entity_report({{"S-PER"}}, {{"O"}}, EntityMode::StrictIOB2),
                    Contains("tag 'S-PER': strict IOB2 has no S- tags"));
}
