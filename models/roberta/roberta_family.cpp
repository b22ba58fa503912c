// The RoBERTa family's registry entry: architectures (the bare encoder first, as AutoModel builds
// it), presets, pre-training head and recipe, tokenizer, positions counted past padding.
#include "models/core/registry.hpp"
#include "models/roberta/roberta.hpp"
#include "models/roberta/roberta_heads.hpp"

namespace xg::models {

FamilyEntry roberta_family() {
  FamilyEntry f;
  f.model_type = RobertaConfig::kModelType;
  f.architectures = {architecture_entry<RobertaModel, RobertaConfig>(), architecture_entry<RobertaForMaskedLM, RobertaConfig>(),
                     head_architecture_entry<RobertaForSequenceClassification, RobertaConfig>(),
                     head_architecture_entry<RobertaForTokenClassification, RobertaConfig>(),
                     head_architecture_entry<RobertaForQuestionAnswering, RobertaConfig>(),
                     head_architecture_entry<RobertaForMultipleChoice, RobertaConfig>()};
  f.preset = [](const std::string& size) { return RobertaConfig::preset(size).to_json(); };
  f.pretraining = {{SentenceTask::None, RobertaForMaskedLM::kArchitecture}};
  f.recipe.beta2 = 0.98f;  // Adam's beta2 and eps: Liu et al. 2019, section 3.1
  f.recipe.eps = 1e-6f;
  f.tokenizer = {"RobertaTokenizer", VocabularyKind::ByteLevelBpe, ""};
  f.positions_follow_padding = true;
  return f;
}

}  // namespace xg::models
