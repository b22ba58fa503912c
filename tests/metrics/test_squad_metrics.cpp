// SQuAD scoring against the official evaluation scripts and answer decoding against transformers'
// postprocess_qa_predictions (goldens from tools/gen_squad_goldens.py).
#include <catch2/catch.hpp>

#include "metrics/squad_metrics.hpp"
#include "tests/golden.hpp"
#include "text/load_tokenizer.hpp"
#include "text/squad_predictions.hpp"

using namespace xg;
using namespace xg::metrics::squad;
using xg::metrics::Scalars;
using Catch::Matchers::Contains;

namespace {
const std::string kData = std::string(XGRAD_TEST_DATA_DIR) + "/";

std::vector<GoldAnswers> gold_of(const nlohmann::json& j) {
  std::vector<GoldAnswers> out;
  for (const auto& q : j) out.push_back({q["id"], q["answers"].get<std::vector<std::string>>()});
  return out;
}

void check_scores(const Scalars& got, const nlohmann::json& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& [name, value] : got) {
    INFO(name);
    REQUIRE(want.contains(name));
    CHECK(value == Approx(want[name].get<double>()).margin(1e-9));
  }
}
}  // namespace

TEST_CASE("squad metrics: normalisation, exact match and F1 equal the official scripts on edge cases", "[squad]") {
  const auto g = test::load_golden("squad_metric_goldens.json");
  for (const auto& c : g["pairs"]) {
    const std::string pred = c["prediction"], gold = c["gold"];
    INFO("prediction '" << pred << "', gold '" << gold << "'");
    CHECK(normalize_answer(pred) == c["normalized_prediction"].get<std::string>());
    CHECK(normalize_answer(gold) == c["normalized_gold"].get<std::string>());
    CHECK(exact_match(pred, gold) == c["exact"].get<bool>());
    CHECK(f1_v1(pred, gold) == Approx(c["f1_v1"].get<double>()).margin(1e-12));
    CHECK(f1_v2(pred, gold) == Approx(c["f1_v2"].get<double>()).margin(1e-12));
  }
}

TEST_CASE("squad metrics: v1.1 and v2.0 dataset scores equal the official scripts", "[squad]") {
  const auto g = test::load_golden("squad_metric_goldens.json");
  check_scores(evaluate_v1(gold_of(g["v1"]["gold"]), g["v1"]["predictions"].get<Predictions>()), g["v1"]["result"]);
  for (const auto& c : g["v2"]) {
    INFO("na_prob_thresh " << c["na_prob_thresh"] << ", " << c["na_probs"].size() << " na_probs");
    check_scores(evaluate_v2(gold_of(c["gold"]), c["predictions"].get<Predictions>(), c["na_probs"].get<std::map<std::string, double>>(),
                             c["na_prob_thresh"].get<double>()),
                 c["result"]);
  }
  CHECK_THROWS_WITH(evaluate_v1({}, {}), Contains("[squad v1.1] no questions"));
  CHECK_THROWS_WITH(evaluate_v1({{"q", {}}}, {}), Contains("question 'q' has no gold answer"));
  CHECK_THROWS_WITH(evaluate_v2({{"q", {"x"}}}, {}), Contains("[squad v2.0] no prediction for question 'q'"));
}

TEST_CASE("squad answers: n-best decoding over windows equals postprocess_qa_predictions", "[squad]") {
  const auto g = test::load_golden("squad_feature_goldens.json");
  const auto questions = text::read_squad(kData + g["file"].get<std::string>());
  text::SquadFeatureOptions fo;
  fo.max_len = g["max_len"];
  fo.doc_stride = g["doc_stride"];
  fo.max_query_length = g["max_query_length"];
  const auto tok = text::open_tokenizer(kData + "../../data/bert-base-uncased-vocab.txt");
  const auto features = text::squad_features(questions, *tok, fo);
  std::vector<text::SpanLogits> logits;
  for (size_t i = 0; i < features.size(); ++i)
    logits.push_back({g["start_logits"][i].get<std::vector<float>>(), g["end_logits"][i].get<std::vector<float>>()});
  for (const auto& d : g["decoded"]) {
    text::SquadDecodeOptions o;
    o.version_2 = d["version_2"];
    o.n_best_size = d["n_best_size"];
    o.max_answer_length = d["max_answer_length"];
    o.null_score_diff_threshold = d["null_score_diff_threshold"];
    INFO("v2 " << o.version_2 << ", n_best " << o.n_best_size << ", max_answer_length " << o.max_answer_length);
    const auto got = text::decode_squad_answers(questions, features, logits, o);
    REQUIRE(got.size() == questions.size());
    size_t none = 0;
    for (size_t q = 0; q < questions.size(); ++q) {
      INFO("question " << questions[q].id);
      CHECK(got[q].text == d["predictions"][questions[q].id].get<std::string>());
      if (o.version_2) {
        CHECK(got[q].null_odds == Approx(d["null_odds"][questions[q].id].get<double>()).margin(1e-5));
        none += got[q].text.empty();
      } else {
        CHECK(got[q].probability == Approx(d["probabilities"][questions[q].id].get<double>()).margin(1e-5));
      }
      if (got[q].text != "empty")  // the span is where the text is
        CHECK(text::code_point_slice(*questions[q].context, got[q].start, got[q].end) == got[q].text);
    }
    if (o.version_2) CHECK(none == 2);  // the goldens' two unanswerable questions
  }
  CHECK_THROWS_WITH(text::decode_squad_answers(questions, features, {}, {}), Contains("[squad] 86 windows but logits for 0"));
}

TEST_CASE("squad answers: v2.0 where every span's text is empty takes the best span that is not the null", "[squad]") {
  // One window: [CLS] q [SEP] <a token with empty offsets> [SEP]. Its only span has no text, so
  // utils_qa's search for a non-empty answer would run off the list.
  text::SquadQuestion q;
  q.id = "q0";
  q.context = std::make_shared<const std::string>("   ");
  text::SquadFeature f;
  f.encoding.ids = {0, 1, 2, 3, 2};
  f.encoding.offsets = {{0, 0}, {0, 0}, {0, 0}, {1, 1}, {0, 0}};
  f.context_begin = 3;
  f.context_end = 4;
  for (float null_logit : {-1.f, 3.f}) {
    INFO("null logit " << null_logit);
    text::SpanLogits l{{null_logit, -5.f, -5.f, 2.f, -5.f}, {null_logit, -5.f, -5.f, 2.f, -5.f}};
    text::SquadDecodeOptions o;
    o.version_2 = true;
    const auto got = text::decode_squad_answers({q}, {f}, {l}, o);
    REQUIRE(got.size() == 1);
    CHECK(got[0].text.empty());
    CHECK(got[0].null_odds == Approx(2 * null_logit - 4.f));
    CHECK(got[0].start == (null_logit < 0 ? 1u : 0u));  // the span at offset 1 wins, else the null at 0
  }
}
