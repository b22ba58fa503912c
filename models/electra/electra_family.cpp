// The ELECTRA family's registry entry: architectures (the bare encoder first, as AutoModel builds
// it), presets, the pre-training head and recipe, tokenizer.
#include "models/core/registry.hpp"
#include "models/electra/electra.hpp"
#include "models/electra/electra_heads.hpp"

namespace xg::models {

FamilyEntry electra_family() {
  FamilyEntry f;
  f.model_type = ElectraConfig::kModelType;
  f.architectures = {architecture_entry<ElectraModel, ElectraConfig>(), architecture_entry<ElectraForPreTraining, ElectraConfig>(),
                     architecture_entry<ElectraForMaskedLM, ElectraConfig>(),
                     head_architecture_entry<ElectraForSequenceClassification, ElectraConfig>(),
                     head_architecture_entry<ElectraForTokenClassification, ElectraConfig>(),
                     head_architecture_entry<ElectraForQuestionAnswering, ElectraConfig>(),
                     head_architecture_entry<ElectraForMultipleChoice, ElectraConfig>()};
  f.preset = [](const std::string& size) { return ElectraConfig::preset(size).to_json(); };
  // Replaced-token detection on packed sequences, no sentence task (Clark et al. 2020).
  f.pretraining = {{SentenceTask::None, ElectraForPreTraining::kArchitecture}};
  // The paper's masking: a chosen token becomes [MASK] 85% of the time and stays itself otherwise
  // (google-research/electra, pretrain_helpers.mask); no random tokens: the generator makes those.
  f.recipe.mask_token_rate = 0.85f;
  f.recipe.random_token_rate = 0.f;
  f.tokenizer = {"BertTokenizer", VocabularyKind::WordPiece, "data/bert-base-uncased-vocab.txt"};
  return f;
}

}  // namespace xg::models
