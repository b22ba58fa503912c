#pragma once
// The GLUE and SuperGLUE text-classification tasks by name (`--task cola`, `mnli`, `stsb`,
// `boolq`, ...). Each knows its files as the benchmark ships them (GLUE: TSVs, CoLA's train and
// dev without a header, MNLI's dev_matched/dev_mismatched, test files without labels; SuperGLUE:
// JSON Lines), their columns, its labels in the official order (transformers' GLUE processors;
// SuperGLUE's features in Hugging Face datasets), regression for STS-B, its official metrics and
// main score, and its leaderboard submission file.
//
// Left out, being no text or text-pair classification: COPA (multiple choice), MultiRC (answers
// nested in passages, scored per question as well), ReCoRD (entity spans), WSC (coreference
// spans), and the test-only diagnostics AX, AX-b and AX-g (an MNLI or RTE model predicts them).
#include <cstdint>
#include <string>
#include <vector>

#include "models/core/pretrained.hpp"
#include "text/classification_data.hpp"
#include "text/tokenizer.hpp"
#include "training/metric_sinks.hpp"

namespace xg::training {

enum class Benchmark { Glue, SuperGlue };

struct BenchmarkTask {
  std::string name;  // the --task name: "cola", "mnli-mm", "boolq", "superglue-rte"
  Benchmark benchmark = Benchmark::Glue;
  std::string submission;  // the leaderboard's name of the task: "CoLA", "MNLI-mm", "BoolQ"
  std::string train_file, dev_file, test_file;  // as shipped in the task's folder
  text::TextColumns labelled;                   // columns of the train and dev files
  text::TextColumns test;                       // the test file's: an id, no label
  std::vector<std::string> labels;              // the official order; empty: regression (STS-B)
  std::vector<std::string> metrics;             // official: accuracy, f1, f1_macro, mcc, pearson, spearman

  bool regression() const { return labels.empty(); }
  // The submission file's name: "CoLA.tsv" (GLUE), "BoolQ.jsonl" (SuperGLUE).
  std::string predictions_file() const;
};

// Every task: GLUE's, then SuperGLUE's.
const std::vector<BenchmarkTask>& benchmark_tasks();
// The task of a --task name, or nullptr when it names none.
const BenchmarkTask* find_benchmark_task(const std::string& name);
// "cola, sst2, ..., wic": for help texts and errors.
std::string benchmark_task_names();

// The task's files in its folder as the benchmark ships it (GLUE's MNLI/train.tsv,
// dev_matched.tsv, test_matched.tsv; SuperGLUE's BoolQ/train.jsonl, val.jsonl, test.jsonl). Throws
// "[task] folder: no file" when train or dev is missing; test is empty when the folder has none.
struct BenchmarkFiles {
  std::string train, dev, test;
};
BenchmarkFiles benchmark_files(const BenchmarkTask& task, const std::string& folder);

struct BenchmarkScores {
  Scalars values;   // the official metrics, "score" (the main one) when there are several, "examples"
  double main = 0;  // the mean of the official metrics (GLUE's and SuperGLUE's task score)
  std::string summary;
};
// The task's official metrics of label ids (ids in task.labels' order). Binary F1 is that of
// label id 1 (MRPC's "equivalent", QQP's "duplicate"), CB's F1 the macro average over its labels.
BenchmarkScores score_benchmark(const BenchmarkTask& task, const std::vector<int64_t>& truth, const std::vector<int64_t>& predicted);
// The official metrics of a regression (STS-B): Pearson and Spearman; a constant input scores
// NaN, and main -infinity.
BenchmarkScores score_regression(const BenchmarkTask& task, const std::vector<double>& truth, const std::vector<double>& predicted);

// One test example's prediction: its id from the test file, and its label or (regression) value.
struct Prediction {
  std::string id;
  std::string label;
  double value = 0;
};
// A test example's prediction from the model's outputs: the label (of the model's id2label) with
// the largest logit, or for regression the value itself.
Prediction predict(const BenchmarkTask& task, const std::string& id, const float* outputs, const std::vector<std::string>& id2label);
// Writes predictions in the leaderboard's format: GLUE a TSV with the header index<TAB>prediction
// (labels as the task's files write them; STS-B's value clipped to [0, 5] with 3 decimals),
// SuperGLUE JSON Lines {"idx": N, "label": "..."}. Throws "[predictions] path: ..." when it cannot.
void write_predictions(const BenchmarkTask& task, const std::string& path, const std::vector<Prediction>& predictions);

// Predicts every example of the task's unlabelled test file with a fine-tuned classifier and its
// tokenizer (a ScoringModel's: eval mode, no gradients; `max_len` tokens per example, `batch` per
// forward pass) and writes them to `path` with write_predictions.
void write_test_predictions(const BenchmarkTask& task, models::PretrainedModel& model, const text::Tokenizer& tok,
                            const std::string& test_file, const std::string& path, size_t max_len, size_t batch);

}  // namespace xg::training
