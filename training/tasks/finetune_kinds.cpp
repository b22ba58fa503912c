// The fine-tuning kinds bert_finetune offers, in --help order. A new kind of task adds one line.
#include "training/tasks/classification.hpp"
#include "training/tasks/finetuning.hpp"
#include "training/tasks/multiple_choice.hpp"
#include "training/tasks/ner.hpp"
#include "training/tasks/question_answering.hpp"

namespace xg::training {

std::vector<std::unique_ptr<FinetuneKind>> make_finetune_kinds() {
  std::vector<std::unique_ptr<FinetuneKind>> k;
  k.push_back(std::make_unique<ClassificationKind>());
  k.push_back(std::make_unique<NerKind>());
  k.push_back(std::make_unique<QuestionAnsweringKind>());
  k.push_back(std::make_unique<MultipleChoiceKind>());
  return k;
}

const std::vector<std::unique_ptr<FinetuneKind>>& finetune_kinds() {
  static const std::vector<std::unique_ptr<FinetuneKind>> kinds = make_finetune_kinds();
  return kinds;
}

}  // namespace xg::training
