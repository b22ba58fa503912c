// inference::Pipeline, the C++ API for the everyday jobs: classification against transformers'
// probabilities (tools/gen_classify_goldens.py), the other jobs' results against the library
// functions they wrap, batching that does not change results, and refusals that name the model.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "inference/pipeline.hpp"
#include "nn/safetensors.hpp"
#include "tests/head_checkpoints.hpp"
#include "tests/temp_path.hpp"

using namespace xg;
using Catch::Matchers::Contains;

namespace {

using test::kHeads;

inference::Pipeline open(const std::string& model, size_t batch = 32) {
  inference::PipelineOptions o;
  o.tokenizer = kHeads + "classify_vocab.txt";
  o.batch = batch;
  return inference::Pipeline::load(kHeads + model, o);
}

}  // namespace

TEST_CASE("Pipeline::classify: transformers' probabilities for sentences and pairs, in any batch size", "[pipeline]") {
  const auto goldens = nlohmann::json::parse(std::ifstream(kHeads + "classify_goldens.json"));
  for (const size_t batch : {1, 2, 32}) {
    INFO("batch " << batch);
    const inference::Pipeline p = open("seq_single", batch);
    const auto& expected = goldens.at("seq_single");
    const auto& names = expected.at("id2label");
    size_t row = 0;
    for (const auto& input : goldens.at("inputs")) {
      INFO("input " << row);
      const auto labels = input.size() > 1 ? p.classify_pairs({{input[0], input[1]}}, 3).front() : p.classify(input[0].get<std::string>(), 3);
      REQUIRE(labels.size() == 3);
      for (size_t k = 0; k < 3; ++k) {
        const size_t id = size_t(std::find(names.begin(), names.end(), labels[k].label) - names.begin());
        REQUIRE(id < 3);
        CHECK(labels[k].score == Approx(expected.at("outputs")[row][id].get<double>()).margin(1e-5));
        if (k > 0) CHECK(labels[k].score <= labels[k - 1].score);
      }
      ++row;
    }
    // many at once: the same as one by one
    const std::vector<std::string> texts{"the cat sat on the mat", "It's fun!", "a dog ran"};
    const auto together = p.classify(texts, 1);
    REQUIRE(together.size() == 3);
    for (size_t i = 0; i < texts.size(); ++i) {
      CHECK(together[i].front().label == p.classify(texts[i]).front().label);
      CHECK(together[i].front().score == Approx(p.classify(texts[i]).front().score).margin(1e-6));
    }
  }
  const inference::Pipeline regression = open("seq_regression");
  const auto value = regression.classify(goldens.at("inputs")[0][0].get<std::string>(), 5);
  REQUIRE(value.size() == 1);  // the value itself, under the one label
  CHECK(value[0].score == Approx(goldens.at("seq_regression").at("outputs")[0][0].get<double>()).margin(1e-5));
}

TEST_CASE("Pipeline: entities, answers, filled masks and embeddings", "[pipeline]") {
  SECTION("entities: spans index the text, in batches or alone") {
    const std::string dir = test::head_checkpoint("token");  // its five outputs as IOB2 tags
    inference::PipelineOptions o;
    o.tokenizer = kHeads + "classify_vocab.txt";
    o.batch = 2;
    const inference::Pipeline p = inference::Pipeline::load(dir, o);
    const std::vector<std::string> texts{"the cat sat on the mat", "a dog ran and the cat sat", "it's fun"};
    const auto found = p.entities(texts);
    REQUIRE(found.size() == 3);
    for (size_t i = 0; i < texts.size(); ++i) {
      const auto alone = p.entities(texts[i]);
      REQUIRE(alone.size() == found[i].size());
      for (size_t e = 0; e < alone.size(); ++e) {
        CHECK(alone[e].text == found[i][e].text);
        CHECK(texts[i].substr(alone[e].start, alone[e].end - alone[e].start) == alone[e].text);  // ASCII: code points are bytes
        CHECK(alone[e].score > 0.0);
        CHECK(alone[e].score <= 1.0);
      }
    }
  }
  SECTION("answer: a span of the context, its probability in (0, 1]") {
    const inference::Pipeline p = open("qa");
    const std::string context = "the cat sat on the mat and the dog ran";
    const auto a = p.answer("cat", context);  // 12 positions: a short question leaves the context room
    CHECK(!a.text.empty());
    CHECK(context.substr(a.start, a.end - a.start) == a.text);
    CHECK(a.probability > 0.0);
    CHECK(a.probability <= 1.0);
  }
  SECTION("fill_mask: candidates by probability, the text with each in place") {
    const inference::Pipeline p = open("mlm");
    const auto masks = p.fill_mask("the [MASK] sat on the [MASK]", 4);
    REQUIRE(masks.size() == 2);
    CHECK(masks[0].front().position == 2);  // [CLS] the [MASK]
    CHECK(masks[1].front().position == 6);
    for (const auto& candidates : masks) {
      REQUIRE(candidates.size() == 4);
      double total = 0;
      for (size_t k = 0; k < candidates.size(); ++k) {
        total += candidates[k].score;
        if (k > 0) CHECK(candidates[k].score <= candidates[k - 1].score);
        CHECK(candidates[k].sequence.find(candidates[k].token) != std::string::npos);
      }
      CHECK(total <= 1.0 + 1e-6);
    }
    CHECK_THROWS_WITH(p.fill_mask("the cat sat"), Contains("the text has no [MASK]"));
  }
  SECTION("embed: one vector per text, unit length when normalized, batches agree") {
    const inference::Pipeline p = open("seq_single", 2);
    const std::vector<std::string> texts{"the cat sat", "a dog ran on the mat", "fun"};
    const auto vectors = p.embed(texts, models::Pooling::Mean, true);
    REQUIRE(vectors.size() == 3);
    for (size_t i = 0; i < texts.size(); ++i) {
      double norm = 0;
      for (float v : vectors[i]) norm += double(v) * v;
      CHECK(std::sqrt(norm) == Approx(1.0).margin(1e-5));
      const auto alone = p.embed({texts[i]}, models::Pooling::Mean, true).front();
      REQUIRE(alone.size() == vectors[i].size());
      for (size_t h = 0; h < alone.size(); ++h) CHECK(alone[h] == Approx(vectors[i][h]).margin(1e-5));
    }
  }
}

TEST_CASE("Pipeline refuses what it cannot run, naming the model and what it needs", "[pipeline][errors]") {
  CHECK_THROWS_WITH(inference::Pipeline::load(kHeads + "missing"), Contains("missing: no such directory"));
  CHECK_THROWS_WITH(open("token").classify("the cat"), Contains("a BertForTokenClassification, not a sequence classifier"));
  CHECK_THROWS_WITH(open("seq_single").entities("the cat"), Contains("not a token classifier"));
  CHECK_THROWS_WITH(open("seq_single").answer("what", "the cat"), Contains("not a question-answering model"));
  CHECK_THROWS_WITH(open("seq_single").fill_mask("the [MASK]"), Contains("has no language-model head"));
  CHECK_THROWS_WITH(open("seq_single").classify("caf\xc3"), Contains("text 1"));  // invalid UTF-8, named
  inference::PipelineOptions big_vocab;
  big_vocab.tokenizer = std::string(XGRAD_TEST_DATA_DIR) + "/../../data/bert-base-uncased-vocab.txt";
  CHECK_THROWS_WITH(inference::Pipeline::load(kHeads + "seq_single", big_vocab),
                    Contains("seq_single: config.json vocab_size is 30, but the tokenizer has 30522 tokens"));
  inference::PipelineOptions zero;
  zero.tokenizer = kHeads + "classify_vocab.txt";
  zero.batch = 0;
  CHECK_THROWS_WITH(inference::Pipeline::load(kHeads + "seq_single", zero), Contains("batch must be at least 1"));
}

TEST_CASE("checkpoints that would answer with garbage are refused: a missing head, NaN weights, integer weights", "[pipeline][errors]") {
  namespace fs = std::filesystem;
  const nn::StateDict whole = nn::safetensors::read_float_tensors(kHeads + "seq_single/model.safetensors");
  // a copy of the classifier checkpoint with `change` applied to its tensors
  auto variant = [&](const std::string& name, const std::function<void(nn::StateDict&)>& change) {
    const fs::path dir = temp_path("xgrad_pipeline_" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(kHeads + "seq_single/config.json", dir / "config.json");
    fs::copy_file(kHeads + "classify_vocab.txt", dir / "vocab.txt");
    nn::StateDict s = whole;
    change(s);
    nn::safetensors::write((dir / "model.safetensors").string(), s);
    return dir.string();
  };
  const std::string headless = variant("headless", [](nn::StateDict& s) { s.erase("classifier.weight"), s.erase("classifier.bias"); });
  CHECK_THROWS_WITH(inference::Pipeline::load(headless),
                    Contains("has no weights for tensors of its BertForSequenceClassification (classifier.bias, classifier.weight)") &&
                        Contains("a random head would answer"));
  const std::string nan = variant("nan", [](nn::StateDict& s) {
    Tensor t = s.at("classifier.weight").clone();
    t.data()[3] = NAN;
    s["classifier.weight"] = t;
  });
  CHECK_THROWS_WITH(inference::Pipeline::load(nan), Contains("'classifier.weight' holds nan at element 3"));
  const std::string ints = variant("ints", [](nn::StateDict& s) {
    const Tensor w = s.at("classifier.bias");
    s["classifier.bias"] = Tensor::from_ints(std::vector<int64_t>(w.numel(), 0), w.shape());
  });
  CHECK_THROWS_WITH(inference::Pipeline::load(ints), Contains("'classifier.bias' is stored as I64, but it is the model's float weight"));
}
