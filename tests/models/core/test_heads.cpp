// Task heads against Hugging Face transformers (tools/gen_head_goldens.py: each head saved by
// save_pretrained, a padded batch, labels, outputs, loss and every parameter gradient); their
// config fields through config.json; a pre-training checkpoint loaded into a head, reporting what
// transformers reports.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "models/bert/bert_heads.hpp"
#include "models/albert/albert_heads.hpp"
#include "models/core/checkpoint.hpp"
#include "models/roberta/roberta_heads.hpp"
#include "tests/golden.hpp"
#include "tests/head_parity.hpp"
#include "tests/temp_path.hpp"

using namespace xg;
using namespace xg::models;
using Catch::Matchers::Contains;
using xg::test::max_scaled_error;

namespace {
std::string head_dir(const std::string& name) { return std::string(XGRAD_TEST_DATA_DIR) + "/heads/" + name; }

using Golden = test::HeadGolden;
Golden golden(const std::string& name) { return Golden(head_dir(name)); }

void check_parity(const std::string& name, const std::string& architecture, const std::vector<std::string>& label_names,
                  const std::vector<std::string>& output_names) {
  test::check_head_parity(head_dir(name), architecture, label_names, output_names);
}
}  // namespace

TEST_CASE("BertForSequenceClassification matches transformers: single-label, regression, multi-label", "[heads][parity]") {
  check_parity("seq_single", "BertForSequenceClassification", {"labels"}, {"logits"});
  check_parity("seq_regression", "BertForSequenceClassification", {"labels"}, {"logits"});
  check_parity("seq_multi", "BertForSequenceClassification", {"labels"}, {"logits"});
}

TEST_CASE("masked-LM alone (BertForMaskedLM, AlbertForMaskedLM) matches transformers: logits, loss, gradients", "[heads][parity]") {
  check_parity("mlm", "BertForMaskedLM", {"labels"}, {"logits"});  // the tied decoder's gradient in the word embeddings'
  check_parity("albert_mlm", "AlbertForMaskedLM", {"labels"}, {"logits"});
}

TEST_CASE("BertForTokenClassification matches transformers, -100 labels ignored", "[heads][parity]") {
  check_parity("token", "BertForTokenClassification", {"labels"}, {"logits"});
}

TEST_CASE("BertForQuestionAnswering matches transformers, a position beyond the window ignored", "[heads][parity]") {
  check_parity("qa", "BertForQuestionAnswering", {"start_positions", "end_positions"}, {"start_logits", "end_logits"});
}

TEST_CASE("multiple choice (BERT, RoBERTa, ALBERT) matches transformers on (batch, choices, tokens) inputs", "[heads][parity]") {
  check_parity("multiple_choice", "BertForMultipleChoice", {"labels"}, {"logits"});
  check_parity("roberta_multiple_choice", "RobertaForMultipleChoice", {"labels"}, {"logits"});
  check_parity("albert_multiple_choice", "AlbertForMultipleChoice", {"labels"}, {"logits"});
  auto mc = load_pretrained_as<BertForMultipleChoice>(head_dir("multiple_choice"));
  CHECK_THROWS_WITH(mc.model->forward_named(make_inputs(1, 3, {1, 2, 3})), Contains("must be (batch, choices, tokens)"));
  ModelInputs bad = golden("multiple_choice").inputs();
  bad.token_type_ids = reshape(bad.token_type_ids, {2, 21});
  CHECK_THROWS_WITH(mc.model->forward_named(bad), Contains("token_type_ids has shape"));
}

TEST_CASE("RoBERTa's heads match transformers: RobertaClassificationHead on <s>, token classification, QA", "[heads][parity]") {
  check_parity("roberta_seq", "RobertaForSequenceClassification", {"labels"}, {"logits"});
  check_parity("roberta_token", "RobertaForTokenClassification", {"labels"}, {"logits"});
  check_parity("roberta_qa", "RobertaForQuestionAnswering", {"start_positions", "end_positions"}, {"start_logits", "end_logits"});
  auto seq = load_pretrained_as<RobertaForSequenceClassification>(head_dir("roberta_seq"));
  CHECK(seq.model->classifier->dropout_p == Approx(0.3f));
  CHECK(seq.model->config_json().at("model_type") == "roberta");
  CHECK(seq.model->config_json().at("bos_token_id") == 0);  // RoBERTa's own fields are kept
  // a masked-LM checkpoint into the classifier: lm_head dropped, the classification head new
  auto from_mlm = load_pretrained_as<RobertaForSequenceClassification>(std::string(XGRAD_TEST_DATA_DIR) + "/roberta_a", 1);
  std::sort(from_mlm.newly_initialised.begin(), from_mlm.newly_initialised.end());
  std::sort(from_mlm.dropped.begin(), from_mlm.dropped.end());
  CHECK(from_mlm.newly_initialised == std::vector<std::string>{"classifier.dense.bias", "classifier.dense.weight",
                                                                "classifier.out_proj.bias", "classifier.out_proj.weight"});
  CHECK(from_mlm.dropped == std::vector<std::string>{"lm_head.bias", "lm_head.dense.bias", "lm_head.dense.weight",
                                                     "lm_head.layer_norm.bias", "lm_head.layer_norm.weight"});
}

TEST_CASE("ALBERT's heads match transformers: regression, token classification, QA", "[heads][parity]") {
  check_parity("albert_seq", "AlbertForSequenceClassification", {"labels"}, {"logits"});
  check_parity("albert_token", "AlbertForTokenClassification", {"labels"}, {"logits"});
  check_parity("albert_qa", "AlbertForQuestionAnswering", {"start_positions", "end_positions"}, {"start_logits", "end_logits"});
  auto seq = load_pretrained_as<AlbertForSequenceClassification>(head_dir("albert_seq"));
  CHECK(seq.model->head.problem_type == "regression");
  CHECK(seq.model->classifier.dropout_p == Approx(0.1f));  // ALBERT's classifier_dropout_prob
  CHECK(!seq.model->config_json().contains("classifier_dropout"));
  // a pre-training checkpoint into the classifier: predictions and sop_classifier dropped, the classifier new
  auto from_pre = load_pretrained_as<AlbertForSequenceClassification>(std::string(XGRAD_TEST_DATA_DIR) + "/albert_a", 1);
  std::sort(from_pre.newly_initialised.begin(), from_pre.newly_initialised.end());
  CHECK(from_pre.newly_initialised == std::vector<std::string>{"classifier.bias", "classifier.weight"});
  for (const auto& d : from_pre.dropped) CHECK((d.rfind("predictions.", 0) == 0 || d.rfind("sop_classifier.", 0) == 0));
  CHECK(from_pre.dropped.size() == 7);
}

TEST_CASE("head config: id2label, problem_type and classifier_dropout read as transformers reads them", "[heads]") {
  auto loaded = load_pretrained_as<BertForSequenceClassification>(head_dir("seq_single"));
  const HeadConfig& h = loaded.model->head;
  CHECK(h.id2label == std::vector<std::string>{"negative", "neutral", "positive"});
  CHECK(h.problem_type == "single_label_classification");
  REQUIRE(h.classifier_dropout.has_value());
  CHECK(*h.classifier_dropout == Approx(0.2f));
  CHECK(loaded.model->classifier.dropout_p == Approx(0.2f));
  CHECK(h.label_id("positive") == 2);
  CHECK_THROWS_WITH(h.label_id("great"), Contains("unknown label 'great'") && Contains("negative, neutral, positive"));
  // without classifier_dropout the hidden dropout applies
  auto regression = load_pretrained_as<BertForSequenceClassification>(head_dir("seq_regression"));
  CHECK(regression.model->head.num_labels() == 1);
  CHECK(regression.model->classifier.dropout_p == Approx(regression.model->config.hidden_dropout_prob));

  // round trip: what is written reads back the same, keys of id2label as strings
  const nlohmann::json j = loaded.model->config_json();
  CHECK(j.at("id2label").at("1") == "neutral");
  CHECK(j.at("label2id").at("positive") == 2);
  const HeadConfig back = HeadConfig::from_json(j, "saved");
  CHECK(back.id2label == h.id2label);
  CHECK(back.problem_type == h.problem_type);
  CHECK(back.classifier_dropout == h.classifier_dropout);

  // transformers' precedence: id2label, then label2id, then num_labels, then 2 generic labels
  CHECK(HeadConfig::from_json({{"num_labels", 4}}, "c").id2label.back() == "LABEL_3");
  CHECK(HeadConfig::from_json({{"label2id", {{"b", 1}, {"a", 0}}}}, "c").id2label == std::vector<std::string>{"a", "b"});
  CHECK(HeadConfig::from_json({{"id2label", {{"0", "x"}}}, {"num_labels", 5}}, "c").num_labels() == 1);
  CHECK(HeadConfig::from_json(nlohmann::json::object(), "c").id2label == std::vector<std::string>{"LABEL_0", "LABEL_1"});
  CHECK(HeadConfig::from_json({{"problem_type", nullptr}, {"classifier_dropout", nullptr}}, "c").problem_type.empty());
}

TEST_CASE("head config: bad fields are errors naming the file and the field", "[heads][errors]") {
  using J = nlohmann::json;
  CHECK_THROWS_WITH(HeadConfig::from_json({{"id2label", {{"0", "a"}, {"2", "b"}}}}, "cfg.json"),
                    Contains("cfg.json") && Contains("id2label key '2'"));
  CHECK_THROWS_WITH(HeadConfig::from_json({{"id2label", {{"zero", "a"}}}}, "cfg.json"), Contains("id2label key 'zero'"));
  CHECK_THROWS_WITH(HeadConfig::from_json({{"id2label", {{"0", "a"}, {"1", "a"}}}}, "cfg.json"), Contains("'a' appears twice"));
  CHECK_THROWS_WITH(HeadConfig::from_json({{"id2label", {{"0", 3}}}}, "cfg.json"), Contains("must be a string"));
  CHECK_THROWS_WITH(HeadConfig::from_json({{"label2id", {{"a", 1}}}}, "cfg.json"), Contains("label2id[\"a\"] = 1"));
  CHECK_THROWS_WITH(HeadConfig::from_json({{"num_labels", 0}}, "cfg.json"), Contains("cfg.json") && Contains("num_labels must be positive"));
  CHECK_THROWS_WITH(HeadConfig::from_json({{"num_labels", -1}}, "cfg.json"), Contains("non-negative integer"));
  CHECK_THROWS_WITH(HeadConfig::from_json({{"problem_type", "ranking"}}, "cfg.json"), Contains("problem_type 'ranking'"));
  CHECK_THROWS_WITH(HeadConfig::from_json({{"classifier_dropout", 1.5}}, "cfg.json"), Contains("classifier_dropout 1.5"));
  CHECK_THROWS_WITH(HeadConfig::from_json(J::array(), "cfg.json"), Contains("not a JSON object"));
  // question answering predicts two things per position
  BertConfig c;
  c.vocab_size = 20, c.hidden_size = 8, c.num_attention_heads = 2, c.num_hidden_layers = 1, c.intermediate_size = 8;
  CHECK_THROWS_WITH(BertForQuestionAnswering(c, HeadConfig::with_num_labels(3)), Contains("num_labels is 3"));
}

TEST_CASE("head losses: the problem type is inferred as transformers infers it, label errors", "[heads]") {
  const Golden g = golden("seq_multi");
  auto loaded = load_pretrained_as<BertForSequenceClassification>(head_dir("seq_multi"));
  auto& m = *loaded.model;
  m.eval();
  const Tensor logits = m.forward(g.inputs());
  HeadConfig inferred = m.head;
  inferred.problem_type = "";  // float labels with 3 classes: multi-label
  CHECK(sequence_classification_loss(logits, g.f("labels"), inferred).item() == Approx(g.f("loss").item()).epsilon(1e-5));
  // int64 labels with 3 classes: single-label cross-entropy, -100 ignored
  const Tensor ce = sequence_classification_loss(logits, test::ints({2, -100, 0}), inferred);
  CHECK(ce.item() == Approx(cross_entropy(index_select(logits, 0, {0, 2}), test::ints({2, 0})).item()).epsilon(1e-6));
  CHECK_THROWS_WITH(sequence_classification_loss(logits, test::ints({3, 0, 0}), inferred), Contains("label 3 is outside the 3 classes"));
  CHECK_THROWS_WITH(sequence_classification_loss(logits, test::ints({1, 0}), inferred), Contains("2 labels of shape"));
  CHECK_THROWS_WITH(sequence_classification_loss(logits, Tensor::zeros({3}), m.head), Contains("multi-label"));
  HeadConfig single = m.head;
  single.problem_type = "single_label_classification";
  CHECK_THROWS_WITH(sequence_classification_loss(logits, Tensor::zeros({3}), single), Contains("needs int64 labels"));
  CHECK_THROWS_WITH(m.forward_named(g.inputs(), {{"start_positions", test::ints({0, 0, 0})}}), Contains("unknown label 'start_positions'"));
}

TEST_CASE("a pre-training checkpoint into a head: the head is new, the pre-training heads dropped, as transformers reports", "[heads]") {
  const std::string pre = std::string(XGRAD_TEST_DATA_DIR) + "/bert_a";
  std::ifstream f(head_dir("loading_info.json"));
  const nlohmann::json info = nlohmann::json::parse(f);
  auto loaded = load_pretrained_as<BertForSequenceClassification>(pre, 3, {{"num_labels", 3}});
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  CHECK(sorted(loaded.newly_initialised) == info.at("newly_initialised").get<std::vector<std::string>>());
  CHECK(sorted(loaded.dropped) == info.at("dropped").get<std::vector<std::string>>());
  REQUIRE(loaded.notes.size() == 2);
  CHECK_THAT(loaded.notes[0], Contains("2 head tensors of BertForSequenceClassification") && Contains("initialised randomly"));
  CHECK(loaded.model->head.num_labels() == 3);
  // the head is initialised as transformers does: N(0, initializer_range) weights, zero bias
  const auto bias = loaded.model->classifier.linear->bias.to_vector();
  CHECK(std::all_of(bias.begin(), bias.end(), [](float b) { return b == 0.f; }));
  const auto w = loaded.model->classifier.linear->weight.to_vector();
  double sq = 0;
  for (float x : w) sq += double(x) * x;
  CHECK(std::sqrt(sq / double(w.size())) == Approx(loaded.model->config.initializer_range).epsilon(0.3));
  // saved and loaded again: a head checkpoint, nothing new, nothing dropped, the labels kept
  const std::string dir = temp_path("xgrad_head_ckpt");
  loaded.model->head = HeadConfig::with_labels({"a", "b", "c"});
  save_pretrained(*loaded.model, dir);
  auto again = load_pretrained(dir);
  CHECK(again.model->architecture() == "BertForSequenceClassification");
  CHECK(again.newly_initialised.empty());
  CHECK(again.dropped.empty());
  CHECK(dynamic_cast<BertForSequenceClassification&>(*again.model).head.id2label == std::vector<std::string>{"a", "b", "c"});
  // into the other heads: question answering drops the pooler and the classifier, its qa_outputs are new
  auto qa = load_pretrained_as<BertForQuestionAnswering>(dir, 1, {{"num_labels", 2}});
  CHECK(sorted(qa.dropped) == std::vector<std::string>{"bert.pooler.dense.bias", "bert.pooler.dense.weight", "classifier.bias", "classifier.weight"});
  CHECK(sorted(qa.newly_initialised) == std::vector<std::string>{"qa_outputs.bias", "qa_outputs.weight"});
  CHECK(qa.model->config_json().at("id2label").at("1") == "LABEL_1");  // num_labels replaces the labels, as in transformers
  // a classifier of another size is an error naming the tensor (transformers: ignore_mismatched_sizes)
  CHECK_THROWS_WITH(load_pretrained_as<BertForTokenClassification>(dir, 1, {{"num_labels", 4}}), Contains("classifier.weight"));
  std::filesystem::remove_all(dir);
}
