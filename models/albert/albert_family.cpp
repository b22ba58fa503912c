// The ALBERT family's registry entry: architectures (the bare encoder first, as AutoModel builds
// it), presets, pre-training heads and recipe, tokenizer.
#include "models/albert/albert.hpp"
#include "models/albert/albert_heads.hpp"
#include "models/core/registry.hpp"

namespace xg::models {

FamilyEntry albert_family() {
  FamilyEntry f;
  f.model_type = AlbertConfig::kModelType;
  f.architectures = {architecture_entry<AlbertModel, AlbertConfig>(), architecture_entry<AlbertForPreTraining, AlbertConfig>(),
                     architecture_entry<AlbertForMaskedLM, AlbertConfig>(),
                     head_architecture_entry<AlbertForSequenceClassification, AlbertConfig>(),
                     head_architecture_entry<AlbertForTokenClassification, AlbertConfig>(),
                     head_architecture_entry<AlbertForQuestionAnswering, AlbertConfig>(),
                     head_architecture_entry<AlbertForMultipleChoice, AlbertConfig>()};
  f.preset = [](const std::string& size) { return AlbertConfig::preset(size).to_json(); };
  f.pretraining = {{SentenceTask::SentenceOrder, AlbertForPreTraining::kArchitecture}, {SentenceTask::None, AlbertForMaskedLM::kArchitecture}};
  f.recipe.max_ngram = 3;      // n-gram masking: Lan et al. 2019, section 4.1
  f.recipe.optimizer = "lamb";  // section A.2
  f.tokenizer = {"AlbertTokenizer", VocabularyKind::SentencePiece, ""};
  return f;
}

}  // namespace xg::models
