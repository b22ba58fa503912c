#pragma once
// Named-entity recognition as a fine-tuning kind (training/tasks/finetuning.hpp), `--task ner`
// (alias conll2003): a *ForTokenClassification model of any registered family on CoNLL files
// (text/conll_data.hpp). The labels are the training file's tags in IOB2 (whatever its scheme),
// saved as id2label in each checkpoint's config.json; a token-classification checkpoint keeps its
// own labels when it already has named ones. Each word is labelled on its first sub-token (or on
// all, --label-all-tokens); a sentence longer than --max-len is cut into windows that overlap by
// --stride sub-tokens. The best dev entity F1 (seqeval's default mode, micro) picks OUT/best; the
// predictions file is CoNLL: "word gold predicted", tags in the input file's scheme.
#include <memory>
#include <string>

#include "text/conll_data.hpp"
#include "training/tasks/finetuning.hpp"

namespace xg::training {

// The NER kind's own options (the common ones are FinetuneOptions).
struct NerOptions : ResumableOptions {
  size_t tag_column = 0;           // 1-based; 0: the last column
  std::string tag_scheme = "auto"; // auto, iob1, iob2, bioes
  bool label_all_tokens = false;   // label every sub-token of a word, not only the first
  size_t stride = 0;               // sub-tokens shared by consecutive windows of a long sentence; 0: a quarter

  static const OptionTable<NerOptions>& table();
  text::ConllOptions conll() const;
  text::WordAlignOptions align(size_t max_len) const;
};

// Scores: entity precision, recall and F1 (micro), per type "f1_TYPE", token accuracy, and the
// counts of sentences and true entities.
class NerKind : public FinetuneKind {
 public:
  std::vector<std::string> task_names() const override { return {"ner", "conll2003"}; }
  std::string inference_command() const override { return "ner"; }
  void add_options(CLI::App& app) override { NerOptions::table().add_to(app, options_, "Named entities (--task ner)"); }
  BoundOptions options() override { return BoundOptions(NerOptions::table(), options_); }
  std::unique_ptr<Task> make_task(const FinetuneOptions& o, const TaskContext& ctx) override;
  nlohmann::json score_file(const std::string& checkpoint, const std::string& file, const FinetuneOptions& o,
                            size_t batch_size, const std::string& predictions) override;

  NerOptions& settings() { return options_; }

 private:
  NerOptions options_;
};

}  // namespace xg::training
