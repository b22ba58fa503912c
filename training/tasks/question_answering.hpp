#pragma once
// Extractive question answering as a fine-tuning kind (training/tasks/finetuning.hpp): a
// *ForQuestionAnswering model of any registered family on SQuAD files (text/squad_data.hpp).
// --task squad (v1.1: every question has an answer) or squad_v2 (v2.0: unanswerable questions
// are trained to point at [CLS] and answered "" when the null score wins). Training and scoring
// run on run_qa's windows; answers are decoded as postprocess_qa_predictions does and scored by
// the official evaluation scripts (metrics/squad_metrics.hpp). The best dev F1 picks OUT/best.
// --predictions writes the official format: {"id": "answer text"}, and for v2.0 the null odds
// beside it (PREDICTIONS without .json, then "_null_odds.json"), evaluate-v2.0.py's --na-prob-file.
#include <string>
#include <vector>

#include "training/tasks/finetuning.hpp"

namespace xg::training {

// The QA kind's own options (the common ones, --max-len included, are FinetuneOptions).
struct QuestionAnsweringOptions : ResumableOptions {
  size_t doc_stride = 0;          // 0: a third of --max-len (run_qa's 128 of 384)
  size_t max_query_length = 64;   // question tokens kept
  size_t n_best_size = 20;
  size_t max_answer_length = 30;  // tokens
  double null_score_diff_threshold = 0.0;  // squad_v2: answer "" when null score - best span > this

  static const OptionTable<QuestionAnsweringOptions>& table();
};

class QuestionAnsweringKind : public FinetuneKind {
 public:
  std::vector<std::string> task_names() const override { return {"squad", "squad_v2"}; }
  std::string inference_command() const override { return "qa"; }
  void add_options(CLI::App& app) override;
  BoundOptions options() override { return BoundOptions(QuestionAnsweringOptions::table(), options_); }
  void select(const std::string& task_name, FinetuneOptions&) override { version_2_ = task_name == "squad_v2"; }
  std::unique_ptr<Task> make_task(const FinetuneOptions& o, const TaskContext& ctx) override;
  // Scores: v1.1 "exact_match", "f1"; v2.0 "exact", "f1", "total", "HasAns_*", "NoAns_*",
  // "best_exact", "best_f1" and their thresholds (over the null odds); and "questions".
  nlohmann::json score_file(const std::string& checkpoint, const std::string& file, const FinetuneOptions& o,
                            size_t batch_size, const std::string& predictions) override;

  QuestionAnsweringOptions& settings() { return options_; }

 private:
  QuestionAnsweringOptions options_;
  bool version_2_ = false;
};

// Where --predictions PATH puts squad_v2's null odds: PATH without ".json", then "_null_odds.json".
std::string null_odds_path(const std::string& predictions);

}  // namespace xg::training
