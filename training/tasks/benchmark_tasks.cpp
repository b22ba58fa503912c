#include "training/tasks/benchmark_tasks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "metrics/eval_metrics.hpp"
#include "models/core/head_config.hpp"
#include "training/tasks/finetuning.hpp"
#include "util/atomic_file.hpp"

namespace fs = std::filesystem;

namespace xg::training {

namespace {

text::TextColumns columns(std::string label, std::string text, std::string text_b = "", std::string id = "") {
  text::TextColumns c;
  c.label = std::move(label);
  c.text = std::move(text);
  c.text_b = std::move(text_b);
  c.id = std::move(id);
  return c;
}

// A GLUE task: train.tsv, its dev and test files, labelled and test columns by header name.
BenchmarkTask glue(std::string name, std::string submission, text::TextColumns labelled, text::TextColumns test,
                   std::vector<std::string> labels, std::vector<std::string> metrics, std::string dev = "dev.tsv",
                   std::string test_file = "test.tsv") {
  return {std::move(name), Benchmark::Glue, std::move(submission), "train.tsv", std::move(dev), std::move(test_file),
          std::move(labelled), std::move(test), std::move(labels), std::move(metrics)};
}

// A SuperGLUE task: train.jsonl, val.jsonl, test.jsonl; the same keys in all three, idx the id.
BenchmarkTask superglue(std::string name, std::string submission, const std::string& text, const std::string& text_b,
                        std::vector<std::string> labels, std::vector<std::string> metrics) {
  return {std::move(name), Benchmark::SuperGlue, std::move(submission), "train.jsonl", "val.jsonl", "test.jsonl",
          columns("label", text, text_b), columns("", text, text_b, "idx"), std::move(labels), std::move(metrics)};
}

std::vector<BenchmarkTask> all_tasks() {
  const std::vector<std::string> binary = {"0", "1"}, entailment = {"entailment", "not_entailment"};
  // MNLI's label order is transformers' MnliProcessor's (the files write the names)
  const std::vector<std::string> mnli_labels = {"contradiction", "entailment", "neutral"};
  const text::TextColumns mnli = columns("gold_label", "sentence1", "sentence2"), mnli_test = columns("", "sentence1", "sentence2", "index");
  const text::TextColumns pair = columns("label", "sentence1", "sentence2"), pair_test = columns("", "sentence1", "sentence2", "index");
  // CoLA's train and dev have no header: source, label, the author's mark, sentence
  text::TextColumns cola = columns("2", "4");
  return {
      glue("cola", "CoLA", cola, columns("", "sentence", "", "index"), binary, {"mcc"}),
      glue("sst2", "SST-2", columns("label", "sentence"), columns("", "sentence", "", "index"), binary, {"accuracy"}),
      glue("mrpc", "MRPC", columns("Quality", "#1 String", "#2 String"), columns("", "#1 String", "#2 String", "index"), binary,
           {"f1", "accuracy"}),
      glue("qqp", "QQP", columns("is_duplicate", "question1", "question2"), columns("", "question1", "question2", "id"), binary,
           {"f1", "accuracy"}),
      glue("stsb", "STS-B", columns("score", "sentence1", "sentence2"), pair_test, {}, {"pearson", "spearman"}),
      glue("mnli", "MNLI-m", mnli, mnli_test, mnli_labels, {"accuracy"}, "dev_matched.tsv", "test_matched.tsv"),
      glue("mnli-mm", "MNLI-mm", mnli, mnli_test, mnli_labels, {"accuracy"}, "dev_mismatched.tsv", "test_mismatched.tsv"),
      glue("qnli", "QNLI", columns("label", "question", "sentence"), columns("", "question", "sentence", "index"), entailment,
           {"accuracy"}),
      glue("rte", "RTE", pair, pair_test, entailment, {"accuracy"}),
      glue("wnli", "WNLI", pair, pair_test, binary, {"accuracy"}),
      superglue("boolq", "BoolQ", "question", "passage", {"false", "true"}, {"accuracy"}),
      superglue("cb", "CB", "premise", "hypothesis", {"entailment", "contradiction", "neutral"}, {"accuracy", "f1_macro"}),
      superglue("superglue-rte", "RTE", "premise", "hypothesis", entailment, {"accuracy"}),
      // the target word leads the first sentence: a pair classifier sees which word is meant
      superglue("wic", "WiC", "word+sentence1", "sentence2", {"false", "true"}, {"accuracy"}),
  };
}

const char* display_name(const std::string& metric) {
  if (metric == "accuracy") return "accuracy";
  if (metric == "f1") return "F1";
  if (metric == "f1_macro") return "macro F1";
  if (metric == "mcc") return "MCC";
  if (metric == "pearson") return "Pearson";
  return "Spearman";
}

// The official metrics' values, their mean as the main score, and a one-line summary.
BenchmarkScores gather(const BenchmarkTask& task, const std::vector<double>& values, size_t examples) {
  BenchmarkScores s;
  double sum = 0;
  std::string parts;
  for (size_t i = 0; i < values.size(); ++i) {
    s.values.emplace_back(task.metrics[i], values[i]);
    sum += values[i];
    parts += fmt::format("{}{} {:.4f}", i ? ", " : "", display_name(task.metrics[i]), values[i]);
  }
  s.main = sum / double(values.size());
  if (std::isnan(s.main)) s.main = -std::numeric_limits<double>::infinity();  // never the best
  if (values.size() > 1) s.values.emplace_back("score", s.main);
  s.values.emplace_back("examples", double(examples));
  s.summary = fmt::format("{}: {}{} on {} examples", task.name, parts, values.size() > 1 ? fmt::format(" (score {:.4f})", s.main) : "",
                          examples);
  return s;
}

// A SuperGLUE idx: a number as written, else a string.
nlohmann::json idx_json(const std::string& id) {
  const bool integer = !id.empty() && id.size() < 19 && std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
  return integer ? nlohmann::json(std::stoll(id)) : nlohmann::json(id);
}

}  // namespace

std::string BenchmarkTask::predictions_file() const { return submission + (benchmark == Benchmark::Glue ? ".tsv" : ".jsonl"); }

const std::vector<BenchmarkTask>& benchmark_tasks() {
  static const std::vector<BenchmarkTask> tasks = all_tasks();
  return tasks;
}

const BenchmarkTask* find_benchmark_task(const std::string& name) {
  for (const auto& t : benchmark_tasks())
    if (t.name == name) return &t;
  return nullptr;
}

std::string benchmark_task_names() {
  std::string names;
  for (const auto& t : benchmark_tasks()) names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

BenchmarkFiles benchmark_files(const BenchmarkTask& task, const std::string& folder) {
  const fs::path dir(folder);
  if (!fs::is_directory(dir)) throw std::invalid_argument(fmt::format("[{}] {}: not a directory", task.name, folder));
  auto required = [&](const std::string& name) {
    const fs::path p = dir / name;
    if (!fs::exists(p))
      throw std::invalid_argument(fmt::format("[{}] {}: no {} (the {} files are {}, {}, {})", task.name, folder, name, task.submission,
                                              task.train_file, task.dev_file, task.test_file));
    return p.string();
  };
  BenchmarkFiles files{required(task.train_file), required(task.dev_file), ""};
  if (fs::exists(dir / task.test_file)) files.test = (dir / task.test_file).string();
  return files;
}

BenchmarkScores score_benchmark(const BenchmarkTask& task, const std::vector<int64_t>& truth, const std::vector<int64_t>& predicted) {
  if (task.regression()) throw std::invalid_argument(fmt::format("[{}] a regression task is scored on values (score_regression), not label ids", task.name));
  std::vector<double> values;
  for (const auto& m : task.metrics) {
    if (m == "accuracy") values.push_back(metrics::accuracy(truth, predicted));
    else if (m == "f1") values.push_back(metrics::f1_binary(truth, predicted, 1));
    else if (m == "f1_macro") values.push_back(metrics::f1_macro(truth, predicted));
    else values.push_back(metrics::matthews_corrcoef(truth, predicted));
  }
  return gather(task, values, truth.size());
}

BenchmarkScores score_regression(const BenchmarkTask& task, const std::vector<double>& truth, const std::vector<double>& predicted) {
  if (!task.regression()) throw std::invalid_argument(fmt::format("[{}] a classification task is scored on label ids, not values", task.name));
  return gather(task, {metrics::pearson(truth, predicted), metrics::spearman(truth, predicted)}, truth.size());
}

Prediction predict(const BenchmarkTask& task, const std::string& id, const float* outputs, const std::vector<std::string>& id2label) {
  if (task.regression()) return {id, "", double(outputs[0])};
  const size_t best = size_t(std::max_element(outputs, outputs + id2label.size()) - outputs);
  return {id, id2label[best], 0.0};
}

void write_predictions(const BenchmarkTask& task, const std::string& path, const std::vector<Prediction>& predictions) {
  if (task.benchmark == Benchmark::Glue) {
    std::vector<std::pair<std::string, std::string>> rows;
    // STS-B's scores lie in [0, 5]: a regression output outside is clipped, as jiant writes it
    for (const auto& p : predictions)
      rows.emplace_back(p.id, task.regression() ? fmt::format("{:.3f}", std::clamp(p.value, 0.0, 5.0)) : p.label);
    return write_index_predictions(path, rows);
  }
  std::string text;
  for (const auto& p : predictions) text += nlohmann::json{{"idx", idx_json(p.id)}, {"label", p.label}}.dump() + "\n";
  write_text_atomically(path, text);
}

void write_test_predictions(const BenchmarkTask& task, models::PretrainedModel& model, const text::Tokenizer& tok,
                            const std::string& test_file, const std::string& path, size_t max_len, size_t batch) {
  const models::HeadConfig head = models::HeadConfig::from_json(model.config_json(), model.architecture());
  const auto examples = text::read_text_examples(test_file, task.test);
  text::EncodeOptions eo;
  eo.max_length = max_len;
  std::vector<Prediction> predictions;
  for (size_t start = 0; start < examples.size(); start += batch) {
    std::vector<models::Sequence> sequences;
    for (size_t i = start; i < std::min(examples.size(), start + batch); ++i) {
      const auto& e = examples[i];
      const text::Encoding enc = e.pair ? tok.encode_pair(e.text_a, e.text_b, eo) : tok.encode(e.text_a, eo);
      sequences.push_back({{enc.ids.begin(), enc.ids.end()}, {enc.type_ids.begin(), enc.type_ids.end()}});
    }
    const std::vector<float> outputs = model.forward_named(models::pad_sequences(sequences, tok.pad_id())).at("logits").to_vector();
    for (size_t i = 0; i < sequences.size(); ++i)
      predictions.push_back(predict(task, examples[start + i].id, outputs.data() + i * head.num_labels(), head.id2label));
  }
  write_predictions(task, path, predictions);
}

}  // namespace xg::training
