#pragma once
// Sequence classification and regression as a fine-tuning kind (training/tasks/finetuning.hpp): a
// *ForSequenceClassification model of any registered family on labelled text files
// (text/classification_data.hpp). Labels are mapped with the model's id2label when the
// checkpoint is already a classifier with named labels, else with the training labels in sorted
// order, and the map is saved in each checkpoint's config.json. The best dev accuracy (Pearson's
// r for regression) picks OUT/best.
#include <memory>
#include <string>

#include "training/tasks/benchmark_tasks.hpp"
#include "training/tasks/finetuning.hpp"

namespace xg::training {

// The classification kind's own options (the common ones are FinetuneOptions).
struct ClassificationOptions : ResumableOptions {
  bool regression = false;  // one output trained with MSE; labels are numbers
  std::string label_column = "label", text_column = "text", text_b_column;
  bool skip_header = false;
  std::string data_dir;  // with a benchmark --task: its folder as shipped (train, dev, test files)

  static const OptionTable<ClassificationOptions>& table();
};

// The kind's scores of a checkpoint on a labelled file: accuracy, F1 (of label 1 for two classes,
// else macro), Matthews correlation; for regression Pearson, Spearman and MSE; and "examples".
// --task also takes the GLUE and SuperGLUE tasks by name (benchmark_tasks.hpp): their columns,
// labels in the official order and official metrics; their unlabelled test file is predicted into
// the leaderboard's file (OUT/CoLA.tsv, OUT/BoolQ.jsonl, ... or --predictions).
class ClassificationKind : public FinetuneKind {
 public:
  std::vector<std::string> task_names() const override;
  std::string inference_command() const override { return "classify"; }
  void select(const std::string& task_name, FinetuneOptions& o) override;
  void add_options(CLI::App& app) override { ClassificationOptions::table().add_to(app, options_, "Classification"); }
  BoundOptions options() override { return BoundOptions(ClassificationOptions::table(), options_); }
  std::unique_ptr<Task> make_task(const FinetuneOptions& o, const TaskContext& ctx) override;
  nlohmann::json score_file(const std::string& checkpoint, const std::string& file, const FinetuneOptions& o,
                            size_t batch_size, const std::string& predictions) override;

  ClassificationOptions& settings() { return options_; }

 private:
  ClassificationOptions options_;
  const BenchmarkTask* benchmark_ = nullptr;  // the --task's benchmark, if it names one
};

}  // namespace xg::training
