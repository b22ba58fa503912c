// The BERT family: its Hugging Face name map and its registry entry (architectures, presets,
// pre-training heads and recipe, tokenizer).
#include "models/bert/bert.hpp"
#include "models/bert/bert_heads.hpp"
#include "models/core/registry.hpp"
#include "util/strings.hpp"

namespace xg::models {

std::string canonical_bert_name(const std::string& name) {
  std::string n = name;
  if (n == "bert.embeddings.position_ids" || n == "embeddings.position_ids" || n == "bert.embeddings.token_type_ids" ||
      n == "embeddings.token_type_ids" || n == "cls.predictions.decoder.weight")
    return "";
  if (n.rfind("embeddings.", 0) == 0 || n.rfind("encoder.", 0) == 0 || n.rfind("pooler.", 0) == 0) n = "bert." + n;
  if (ends_with(n, "LayerNorm.gamma")) n.replace(n.size() - 5, 5, "weight");
  else if (ends_with(n, "LayerNorm.beta")) n.replace(n.size() - 4, 4, "bias");
  if (n == "cls.predictions.decoder.bias") n = "cls.predictions.bias";
  return n;
}

// The bare encoder first: what a config.json without "architectures" builds, as AutoModel does.
FamilyEntry bert_family() {
  FamilyEntry f;
  f.model_type = BertConfig::kModelType;
  f.architectures = {architecture_entry<BertModel, BertConfig>(), architecture_entry<BertForPreTraining, BertConfig>(),
                     architecture_entry<BertForMaskedLM, BertConfig>(),
                     head_architecture_entry<BertForSequenceClassification, BertConfig>(),
                     head_architecture_entry<BertForTokenClassification, BertConfig>(),
                     head_architecture_entry<BertForQuestionAnswering, BertConfig>(),
                     head_architecture_entry<BertForMultipleChoice, BertConfig>()};
  f.preset = [](const std::string& size) { return BertConfig::preset(size).to_json(); };
  f.pretraining = {{SentenceTask::NextSentence, BertForPreTraining::kArchitecture}, {SentenceTask::None, BertForMaskedLM::kArchitecture}};
  // The original recipe: single-token masking, AdamW (Devlin et al. 2019); the bundled
  // bert-base-uncased vocabulary unless a run trains or names one.
  f.tokenizer = {"BertTokenizer", VocabularyKind::WordPiece, "data/bert-base-uncased-vocab.txt"};
  return f;
}

}  // namespace xg::models
