// The RoBERTa family: its registered architectures (the bare encoder first, as AutoModel builds it).
#include "models/core/registry.hpp"
#include "models/roberta/roberta.hpp"
#include "models/roberta/roberta_heads.hpp"

namespace xg::models {

FamilyEntry roberta_family() {
  return {RobertaConfig::kModelType,
          {architecture_entry<RobertaModel, RobertaConfig>(), architecture_entry<RobertaForMaskedLM, RobertaConfig>(),
           head_architecture_entry<RobertaForSequenceClassification, RobertaConfig>(),
           head_architecture_entry<RobertaForTokenClassification, RobertaConfig>(),
           head_architecture_entry<RobertaForQuestionAnswering, RobertaConfig>(),
           head_architecture_entry<RobertaForMultipleChoice, RobertaConfig>()},
          [](const std::string& size) { return RobertaConfig::preset(size).to_json(); },
          {{SentenceTask::None, RobertaForMaskedLM::kArchitecture}}};
}

}  // namespace xg::models
