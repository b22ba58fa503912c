#pragma once
// Multiple choice (SWAG, COPA, ...) as a fine-tuning kind: a *ForMultipleChoice model of any
// registered family scores each (context, choice) pair; the loss is cross-entropy over an
// example's choices, as transformers' run_swag trains it. The data are any file the
// classification reader takes (CSV as SWAG ships it, TSV, JSONL), the context and each choice
// named as columns (joined columns with '+': SWAG's "sent2+ending0"), the label the index of the
// right choice. Dev accuracy picks OUT/best.
#include <memory>
#include <string>

#include "training/tasks/finetuning.hpp"

namespace xg::training {

struct MultipleChoiceOptions : ResumableOptions {
  std::string context_column = "sent1";  // a column (or columns joined with '+') every choice is paired with
  // one column spec per choice, comma-separated
  std::string choice_columns = "sent2+ending0,sent2+ending1,sent2+ending2,sent2+ending3";
  std::string choice_label_column = "label";  // the index of the right choice, 0-based

  static const OptionTable<MultipleChoiceOptions>& table();
};

class MultipleChoiceKind : public FinetuneKind {
 public:
  std::vector<std::string> task_names() const override { return {"multiple_choice", "swag"}; }
  void add_options(CLI::App& app) override { MultipleChoiceOptions::table().add_to(app, options_, "Multiple choice"); }
  BoundOptions options() override { return BoundOptions(MultipleChoiceOptions::table(), options_); }
  std::unique_ptr<Task> make_task(const FinetuneOptions& o, const TaskContext& ctx) override;
  nlohmann::json score_file(const std::string& checkpoint, const std::string& file, const FinetuneOptions& o,
                            size_t batch_size, const std::string& predictions) override;

  MultipleChoiceOptions& settings() { return options_; }

 private:
  MultipleChoiceOptions options_;
};

}  // namespace xg::training
