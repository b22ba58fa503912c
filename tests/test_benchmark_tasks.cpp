// GLUE and SuperGLUE tasks by name on small hand-made files in each benchmark's layout (the real
// headers, CoLA without one, MNLI's extra label columns, test files without labels), their
// official metrics and main score, and the leaderboard's predictions files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tests/temp_path.hpp"
#include "text/load_tokenizer.hpp"
#include "training/tasks/benchmark_tasks.hpp"
#include "training/tasks/finetuning.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;

namespace {
struct TempDir {
  TempDir() : path(temp_path("xgrad_benchmark")) { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name, const std::string& content) const {
    const std::string p = path + "/" + name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  std::string read(const std::string& name) const {
    std::ifstream in(path + "/" + name, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string path;
};

const BenchmarkTask& task(const std::string& name) {
  const BenchmarkTask* t = find_benchmark_task(name);
  REQUIRE(t != nullptr);
  return *t;
}

// Reads a labelled file of the task and maps its labels with the task's official list.
std::vector<text::TextExample> labelled(const TempDir& dir, const BenchmarkTask& t, const std::string& name, const std::string& content) {
  const std::string path = dir.file(name, content);
  auto examples = text::read_text_examples(path, t.labelled);
  if (!t.regression()) CHECK(text::label_ids(examples, t.labels, path).size() == examples.size());  // every label known
  return examples;
}
}  // namespace

TEST_CASE("benchmark tasks: names, files and label lists", "[benchmark]") {
  CHECK(benchmark_task_names() == "cola, sst2, mrpc, qqp, stsb, mnli, mnli-mm, qnli, rte, wnli, boolq, cb, superglue-rte, wic");
  CHECK(find_benchmark_task("copa") == nullptr);
  CHECK(task("mnli").labels == std::vector<std::string>{"contradiction", "entailment", "neutral"});
  CHECK(task("mnli").dev_file == "dev_matched.tsv");
  CHECK(task("mnli-mm").dev_file == "dev_mismatched.tsv");
  CHECK(task("mnli-mm").test_file == "test_mismatched.tsv");
  CHECK(task("stsb").regression());
  CHECK(task("cb").labels == std::vector<std::string>{"entailment", "contradiction", "neutral"});
  CHECK(task("boolq").dev_file == "val.jsonl");
  CHECK(task("cola").predictions_file() == "CoLA.tsv");
  CHECK(task("mnli-mm").predictions_file() == "MNLI-mm.tsv");
  CHECK(task("superglue-rte").predictions_file() == "RTE.jsonl");
  CHECK(task("wic").predictions_file() == "WiC.jsonl");
}

TEST_CASE("benchmark tasks: GLUE's TSV layouts", "[benchmark]") {
  TempDir dir;
  // CoLA: no header; the third column is the author's mark, empty for acceptable sentences
  const auto cola = labelled(dir, task("cola"), "cola.tsv", "gj04\t1\t\tOur friends won't buy this analysis.\ngj04\t0\t*\tThey drank the pub.\n");
  REQUIRE(cola.size() == 2);
  CHECK(cola[1].label == "0");
  CHECK(cola[1].text_a == "They drank the pub.");
  const auto cola_test = text::read_text_examples(dir.file("cola_test.tsv", "index\tsentence\n0\tBill whistled past the house.\n"), task("cola").test);
  CHECK(cola_test[0].id == "0");
  CHECK(cola_test[0].label.empty());
  // MNLI: train has label1 and gold_label, dev_matched five annotator labels before gold_label
  const std::string mnli_header = "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse\tsentence1\tsentence2";
  const auto mnli_dev = labelled(dir, task("mnli"), "dev_matched.tsv", mnli_header + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label\n" +
                                 "0\t63735\t63735n\tslate\t( a )\t( b )\t(ROOT a)\t(ROOT b)\tThe new rights are nice.\tEveryone really likes it.\tneutral\tentailment\tneutral\tneutral\tneutral\tneutral\n");
  CHECK(mnli_dev[0].label == "neutral");
  CHECK(mnli_dev[0].text_b == "Everyone really likes it.");
  const auto mnli_test = text::read_text_examples(dir.file("test_matched.tsv", mnli_header + "\n9\t31193\t31193n\tfiction\t( a )\t( b )\t(ROOT a)\t(ROOT b)\tHe left.\tHe stayed.\n"),
                                                  task("mnli").test);
  CHECK(mnli_test[0].id == "9");
  CHECK(mnli_test[0].text_a == "He left.");
  // MRPC: the label is "Quality", the texts "#1 String" and "#2 String"
  const auto mrpc = labelled(dir, task("mrpc"), "mrpc.tsv", "\xEF\xBB\xBFQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t702876\t702977\tAmrozi accused his brother.\tHe accused his brother.\n");
  CHECK(mrpc[0].text_b == "He accused his brother.");
  // QQP: the test file's id column is "id", not "index"
  const auto qqp = labelled(dir, task("qqp"), "qqp.tsv", "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n7\t15\t16\tHow?\tWhy?\t0\n");
  CHECK(qqp[0].label == "0");
  CHECK(text::read_text_examples(dir.file("qqp_test.tsv", "id\tquestion1\tquestion2\n3\tWho?\tWhom?\n"), task("qqp").test)[0].id == "3");
  // STS-B: a real-valued score, last
  const auto stsb = labelled(dir, task("stsb"), "stsb.tsv", "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                                                             "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane is taking off.\tAn air plane is taking off.\t5.000\n");
  CHECK(text::label_values(stsb, "stsb.tsv") == std::vector<double>{5.0});
  const auto qnli = labelled(dir, task("qnli"), "qnli.tsv", "index\tquestion\tsentence\tlabel\n0\tWhen?\tAt noon.\tnot_entailment\n");
  CHECK(qnli[0].text_a == "When?");
  labelled(dir, task("rte"), "rte.tsv", "index\tsentence1\tsentence2\tlabel\n0\tA dog barks.\tAn animal is loud.\tentailment\n");
  labelled(dir, task("wnli"), "wnli.tsv", "index\tsentence1\tsentence2\tlabel\n0\tI stuck a pin.\tThe pin stuck.\t1\n");
  labelled(dir, task("sst2"), "sst2.tsv", "sentence\tlabel\nhide new secretions \t0\n");
  // a label outside the official list is an error naming the file and line
  const std::string bad = dir.file("bad_rte.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tcontradiction\n");
  CHECK_THROWS_WITH(text::label_ids(text::read_text_examples(bad, task("rte").labelled), task("rte").labels, bad),
                    Contains(bad + ":2: unknown label 'contradiction'"));
}

TEST_CASE("benchmark tasks: SuperGLUE's JSON Lines", "[benchmark]") {
  TempDir dir;
  const auto boolq = labelled(dir, task("boolq"), "boolq.jsonl",
                              "{\"question\": \"is it a pepsi product\", \"passage\": \"Barq's is owned by Coca-Cola.\", \"idx\": 0, \"label\": false}\n");
  CHECK(boolq[0].label == "false");
  CHECK(boolq[0].text_a == "is it a pepsi product");
  const auto cb = labelled(dir, task("cb"), "cb.jsonl", "{\"premise\": \"It was not a trend.\", \"hypothesis\": \"it is a trend\", \"label\": \"contradiction\", \"idx\": 4}\n");
  CHECK(cb[0].text_b == "it is a trend");
  labelled(dir, task("superglue-rte"), "rte.jsonl", "{\"premise\": \"A dog barks.\", \"hypothesis\": \"A dog is loud.\", \"label\": \"entailment\", \"idx\": 0}\n");
  // WiC: the target word leads the first text
  const auto wic = labelled(dir, task("wic"), "wic.jsonl",
                            "{\"word\": \"place\", \"sentence1\": \"Do you want to come over to my place later?\", \"sentence2\": \"A political system with no place for the less prominent groups.\", \"idx\": 0, \"label\": false, \"start1\": 31, \"start2\": 27, \"end1\": 36, \"end2\": 32, \"version\": 1.1}\n");
  CHECK(wic[0].text_a == "place Do you want to come over to my place later?");
  CHECK(wic[0].text_b == "A political system with no place for the less prominent groups.");
  const auto test = text::read_text_examples(dir.file("test.jsonl", "{\"question\": \"q\", \"passage\": \"p\", \"idx\": 12}\n"), task("boolq").test);
  CHECK(test[0].id == "12");
  CHECK(test[0].label.empty());
  const std::string no_idx = dir.file("no_idx.jsonl", "{\"question\": \"q\", \"passage\": \"p\"}\n");
  CHECK_THROWS_WITH(text::read_text_examples(no_idx, task("boolq").test), Contains(no_idx + ":1: no id (key 'idx')"));
}

TEST_CASE("benchmark tasks: official metrics and main score", "[benchmark]") {
  // CoLA: Matthews correlation only; tp 1, tn 1, fp 1, fn 1 -> 0
  const auto cola = score_benchmark(task("cola"), {1, 1, 0, 0}, {1, 0, 1, 0});
  CHECK(cola.main == Approx(0.0).margin(1e-12));
  CHECK(cola.values.front().first == "mcc");
  CHECK(cola.summary == "cola: MCC 0.0000 on 4 examples");
  // MRPC: F1 of "1" (2 * 1 / (1 + 2) = 2/3) and accuracy 3/4; the score is their mean
  const auto mrpc = score_benchmark(task("mrpc"), {1, 1, 0, 0}, {1, 0, 0, 0});
  REQUIRE(mrpc.values.size() == 4);
  CHECK(mrpc.values[0] == std::make_pair(std::string("f1"), 2.0 / 3.0));
  CHECK(mrpc.values[1] == std::make_pair(std::string("accuracy"), 0.75));
  CHECK(mrpc.values[2].first == "score");
  CHECK(mrpc.main == Approx((2.0 / 3.0 + 0.75) / 2));
  CHECK(mrpc.values[3] == std::make_pair(std::string("examples"), 4.0));
  // CB: accuracy and the macro F1 over its three labels: F1s 1, 1/2, 0 (neutral never right)
  const auto cb = score_benchmark(task("cb"), {0, 1, 1, 2}, {0, 1, 2, 1});
  CHECK(cb.values[0].second == 0.5);
  CHECK(cb.values[1].second == Approx((1.0 + 0.5 + 0.0) / 3));
  // STS-B: Pearson and Spearman; a constant prediction never becomes the best model
  const auto stsb = score_regression(task("stsb"), std::vector<double>{0, 1, 2, 3}, std::vector<double>{0, 1, 4, 9});
  CHECK(stsb.values[1].second == Approx(1.0));  // Spearman: the same order
  CHECK(stsb.values[0].second < 1.0);
  CHECK(std::isinf(score_regression(task("stsb"), std::vector<double>{0, 1}, std::vector<double>{2, 2}).main));
  CHECK_THROWS_WITH(score_benchmark(task("stsb"), std::vector<int64_t>{0}, std::vector<int64_t>{0}), Contains("[stsb] a regression task"));
  CHECK_THROWS_WITH(score_benchmark(task("rte"), std::vector<int64_t>{}, std::vector<int64_t>{}), Contains("[accuracy] no examples"));
}

TEST_CASE("benchmark tasks: leaderboard predictions files", "[benchmark]") {
  TempDir dir;
  write_predictions(task("mnli"), dir.path + "/MNLI-m.tsv", {{"0", "neutral"}, {"1", "entailment"}});
  CHECK(dir.read("MNLI-m.tsv") == "index\tprediction\n0\tneutral\n1\tentailment\n");
  write_predictions(task("stsb"), dir.path + "/STS-B.tsv", {{"0", "", 3.14159}, {"1", "", -0.2}, {"2", "", 5.5}});
  CHECK(dir.read("STS-B.tsv") == "index\tprediction\n0\t3.142\n1\t0.000\n2\t5.000\n");
  write_predictions(task("boolq"), dir.path + "/BoolQ.jsonl", {{"0", "true"}, {"1", "false"}});
  CHECK(dir.read("BoolQ.jsonl") == "{\"idx\":0,\"label\":\"true\"}\n{\"idx\":1,\"label\":\"false\"}\n");
  CHECK_THROWS_WITH(write_predictions(task("cola"), dir.path + "/CoLA.tsv", {{"a\tb", "1"}}), Contains("holds a tab"));
  CHECK_THROWS_WITH(write_index_predictions(dir.path + "/p.tsv", {{"0", "two\nlines"}}),
                    Contains("[predictions] " + dir.path + "/p.tsv: 'two\nlines' holds a tab or newline"));
}

TEST_CASE("benchmark tasks: a task's files in its folder", "[benchmark]") {
  TempDir dir;
  dir.file("train.tsv", "x");
  CHECK_THROWS_WITH(benchmark_files(task("mnli-mm"), dir.path), Contains("[mnli-mm] " + dir.path + ": no dev_mismatched.tsv"));
  dir.file("dev_mismatched.tsv", "x");
  BenchmarkFiles f = benchmark_files(task("mnli-mm"), dir.path);
  CHECK(f.train == dir.path + "/train.tsv");
  CHECK(f.dev == dir.path + "/dev_mismatched.tsv");
  CHECK(f.test.empty());  // the test file is optional
  dir.file("test_mismatched.tsv", "x");
  CHECK(benchmark_files(task("mnli-mm"), dir.path).test == dir.path + "/test_mismatched.tsv");
  CHECK_THROWS_WITH(benchmark_files(task("boolq"), dir.path), Contains("no train.jsonl"));
  CHECK_THROWS_WITH(benchmark_files(task("cola"), dir.path + "/none"), Contains("not a directory"));
}

TEST_CASE("benchmark tasks: a prediction from the model's outputs", "[benchmark]") {
  const float logits[] = {0.1f, 2.0f, -1.0f};
  const Prediction p = predict(task("mnli"), "17", logits, task("mnli").labels);
  CHECK(p.id == "17");
  CHECK(p.label == "entailment");
  const float value[] = {3.25f};
  CHECK(predict(task("stsb"), "4", value, {"LABEL_0"}).value == 3.25);
}

TEST_CASE("benchmark tasks: test predictions of a classifier checkpoint equal transformers'", "[benchmark]") {
  // the tiny classifiers of tests/data/heads with the vocabulary of tools/gen_classify_goldens.py,
  // whose pairs (inputs 1 and 4) transformers scored
  TempDir dir;
  const std::string heads = std::string(XGRAD_TEST_DATA_DIR) + "/heads/";
  const auto goldens = nlohmann::json::parse(std::ifstream(heads + "classify_goldens.json"));
  const auto& in = goldens.at("inputs");
  auto checkpoint = [&](const std::string& name) {
    const std::string d = dir.path + "/" + name;
    std::filesystem::create_directories(d);
    for (const char* f : {"config.json", "model.safetensors"}) std::filesystem::copy_file(heads + name + "/" + f, d + "/" + f);
    text::open_tokenizer(heads + "classify_vocab.txt")->save_pretrained(d);
    return d;
  };
  const std::string stsb_test = dir.file("stsb_test.tsv", "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\n" +
      fmt::format("0\tg\tf\t2012\t1\ts\ts\t{}\t{}\n1\tg\tf\t2012\t2\ts\ts\t{}\t{}\n", in[1][0].get<std::string>(), in[1][1].get<std::string>(),
                  in[4][0].get<std::string>(), in[4][1].get<std::string>()));
  const ScoringModel regression(checkpoint("seq_regression"), FinetuneOptions{});
  write_test_predictions(task("stsb"), *regression.model, *regression.tok, stsb_test, dir.path + "/STS-B.tsv", 12, 1);
  const auto& values = goldens.at("seq_regression").at("outputs");
  CHECK(dir.read("STS-B.tsv") == fmt::format("index\tprediction\n0\t{:.3f}\n1\t{:.3f}\n", values[1][0].get<double>(), values[4][0].get<double>()));
  // a SuperGLUE JSONL test file, batched: each pair's most likely label (the model's own labels)
  const std::string cb_test = dir.file("cb_test.jsonl", nlohmann::json{{"premise", in[1][0]}, {"hypothesis", in[1][1]}, {"idx", 7}}.dump() + "\n" +
                                                          nlohmann::json{{"premise", in[4][0]}, {"hypothesis", in[4][1]}, {"idx", 8}}.dump() + "\n");
  const ScoringModel single(checkpoint("seq_single"), FinetuneOptions{});
  write_test_predictions(task("cb"), *single.model, *single.tok, cb_test, dir.path + "/CB.jsonl", 12, 2);
  CHECK(dir.read("CB.jsonl") == "{\"idx\":7,\"label\":\"positive\"}\n{\"idx\":8,\"label\":\"positive\"}\n");
}
