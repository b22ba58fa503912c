// The ALBERT family: its registered architectures (the bare encoder first, as AutoModel builds it).
#include "models/albert/albert.hpp"
#include "models/albert/albert_heads.hpp"
#include "models/core/registry.hpp"

namespace xg::models {

FamilyEntry albert_family() {
  return {AlbertConfig::kModelType,
          {architecture_entry<AlbertModel, AlbertConfig>(), architecture_entry<AlbertForPreTraining, AlbertConfig>(),
           architecture_entry<AlbertForMaskedLM, AlbertConfig>(),
           head_architecture_entry<AlbertForSequenceClassification, AlbertConfig>(),
           head_architecture_entry<AlbertForTokenClassification, AlbertConfig>(),
           head_architecture_entry<AlbertForQuestionAnswering, AlbertConfig>(),
           head_architecture_entry<AlbertForMultipleChoice, AlbertConfig>()},
          [](const std::string& size) { return AlbertConfig::preset(size).to_json(); },
          {{SentenceTask::SentenceOrder, AlbertForPreTraining::kArchitecture}, {SentenceTask::None, AlbertForMaskedLM::kArchitecture}}};
}

}  // namespace xg::models
