#pragma once
// Sequence classification and regression as a Task: a *ForSequenceClassification model of any
// registered family (from a checkpoint directory, or a BERT preset trained from scratch) on
// labelled text files (text/classification_data.hpp). Labels are mapped with the model's
// id2label when the checkpoint is already a classifier, else with the training labels in sorted
// order, and the map is saved in each checkpoint's config.json. Each evaluation scores the dev
// set; the best one so far is kept as a checkpoint in OUT/best.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "models/pretrained.hpp"
#include "text/classification_data.hpp"
#include "training/task.hpp"
#include "training/trainer.hpp"
#include "util/options.hpp"

namespace xg::training {

struct ClassificationOptions {
  std::string train;  // labelled text: .tsv, .csv, .jsonl
  std::string dev;    // evaluated each epoch; the best model is kept
  std::string test;   // scored with the best model at the end (optional)
  std::string model = "tiny";  // a checkpoint directory of any registered family, or a BERT preset
  std::string vocab = "data/bert-base-uncased-vocab.txt";  // for a preset; a checkpoint brings its own
  bool cased = false;
  size_t max_len = 128;        // tokens per example, special tokens included
  bool regression = false;     // one output trained with MSE; labels are numbers
  std::string label_column = "label", text_column = "text", text_b_column;
  bool skip_header = false;
  // A GLUE/SuperGLUE task by name (benchmark_tasks.hpp): its columns, labels in the official
  // order, official metrics (the main one picks the best model); --test is then its unlabelled
  // test file, predicted into the leaderboard's file. --data-dir: the task's folder as shipped.
  std::string task, data_dir, predictions;

  static const OptionTable<ClassificationOptions>& table();
};

// Scores of predictions: accuracy, F1 (of label 1 for two classes, else macro), Matthews
// correlation; for regression Pearson, Spearman and the mean squared error. Also "examples".
// `main` is the score the best checkpoint is chosen by (accuracy, or Pearson for regression).
struct Scores {
  Scalars values;
  double main = 0;
  std::string summary;
};

// With --task, sets the benchmark's columns, regression, and from --data-dir the train, dev and
// (when present) test files; throws naming an unknown task and the known ones. Idempotent.
void apply_benchmark_task(ClassificationOptions& options);

// Builds the task: on resume (ctx.checkpoint) the model and tokenizer come from the checkpoint.
std::unique_ptr<Task> make_classification_task(const ClassificationOptions& options, const TaskContext& ctx);

// Scores a checkpoint (a classifier this task saved) on a labelled file, as evaluation does.
Scores score_checkpoint(const std::string& checkpoint, const std::string& file, const ClassificationOptions& options,
                        size_t batch_size);

struct FinetuneResult {
  RunResult run;
  // The best model's scores when the run finished: {"dev": {...}, "test": {...}} (test absent
  // without --test, or for a benchmark task, whose test file is predicted into
  // OUT/<leaderboard file> or --predictions instead); null when it stopped early (a signal or
  // --stop-at), to be resumed.
  nlohmann::json scores;
};

// Fine-tunes per `trainer` and `task`, evaluating on --dev each epoch, then scores OUT/best.
FinetuneResult run_finetuning(TrainerOptions trainer, ClassificationOptions task);

}  // namespace xg::training
