#pragma once
// Model families by config.json's "model_type", and their architectures (the bare encoder and
// each head) by the names in "architectures". A family registers itself in its own file
// (models/bert/bert_family.cpp); builtin_families() lists them and the registry reads that list on
// first use, so nothing depends on static initialisers surviving the static library's link.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/core/head_config.hpp"
#include "models/core/pretrained.hpp"
#include "models/core/pretraining.hpp"

namespace xg::models {

struct ArchitectureEntry {
  std::string name;  // "BertForMaskedLM"
  // Builds the model (weights not yet initialised) from config.json; `source` names the file in errors.
  std::function<std::unique_ptr<PretrainedModel>(const nlohmann::json& config, const std::string& source)> build;
};

// The kind of vocabulary a family's tokenizer reads: what a pre-training run trains for it.
enum class VocabularyKind { WordPiece, ByteLevelBpe, SentencePiece };

// A family's tokenizer: the class tokenizer_config.json names (what a checkpoint that names none
// gets, as AutoTokenizer's model_type mapping), the vocabulary a run trains for it, and the
// bundled file a fresh pre-training run uses when it is given none ("": it trains one).
struct FamilyTokenizer {
  std::string tokenizer_class;  // "BertTokenizer"
  VocabularyKind vocabulary = VocabularyKind::WordPiece;
  std::string default_vocabulary;
};

// What a family's paper sets for pre-training from scratch beyond its heads: whole-word n-gram
// masking, the masked tokens' replacements, and the optimizer (unset: AdamW with its own defaults). Flags override each.
struct PretrainingRecipe {
  size_t max_ngram = 1;
  // What a chosen token becomes: [MASK] at this rate, a random token at random_token_rate, else
  // itself (BERT's 80/10/10).
  float mask_token_rate = 0.8f, random_token_rate = 0.1f;
  std::optional<std::string> optimizer;
  std::optional<float> beta2, eps;
};

struct FamilyEntry {
  std::string model_type;                     // "bert"
  std::vector<ArchitectureEntry> architectures;  // the first is built when config.json names none
  // config.json of a named size ("tiny", "base", ...); throws listing the family's sizes. Unset:
  // the family has none.
  std::function<nlohmann::json(const std::string& size)> preset;
  // The architectures that implement PretrainingHeads, by the sentence task each trains; the
  // family's own recipe first (BERT: BertForPreTraining with NSP).
  std::vector<std::pair<SentenceTask, std::string>> pretraining;
  PretrainingRecipe recipe;
  FamilyTokenizer tokenizer;
  // Default position ids counted over the tokens that are not padding, from pad_token_id + 1
  // (RoBERTa's create_position_ids_from_input_ids): a batch must pad with pad_token_id, and the
  // position table holds pad_token_id + 1 more rows than the longest sequence.
  bool positions_follow_padding = false;
};

// The entry for a model class M built from its family's Config: M(Config::from_json(...)).
template <class M, class Config>
ArchitectureEntry architecture_entry() {
  return {M::kArchitecture, [](const nlohmann::json& j, const std::string& source) -> std::unique_ptr<PretrainedModel> {
            return std::make_unique<M>(Config::from_json(j, source));
          }};
}

// The entry for a task head M(Config, HeadConfig): the family's fields and the head's
// (num_labels, id2label, problem_type, ...) from the same config.json.
template <class M, class Config>
ArchitectureEntry head_architecture_entry() {
  return {M::kArchitecture, [](const nlohmann::json& j, const std::string& source) -> std::unique_ptr<PretrainedModel> {
            return std::make_unique<M>(Config::from_json(j, source), HeadConfig::from_json(j, source));
          }};
}

// Adds a family (throws if its model_type is taken) or a head to a registered family (throws if
// the architecture is taken or the family unknown). Programs may register their own.
void register_family(FamilyEntry family);
void register_architecture(const std::string& model_type, ArchitectureEntry architecture);

// The families compiled into the library (models/core/builtin_families.cpp).
std::vector<FamilyEntry> builtin_families();
// The family of a config.json without "model_type" (this project's files from before it had
// families) and of a bare size name ("base" for "bert-base").
std::string default_model_type();

// config.json's "model_type", or default_model_type() when it has none (or not as a string).
std::string config_model_type(const nlohmann::json& config);
// A copy of `model_type`'s entry; throws listing the registered families when it is unknown.
FamilyEntry family_entry(const std::string& model_type);
// Where the default position ids of a model with config.json `config` start: pad_token_id + 1 for
// a family whose positions follow padding, else 0. Throws for an unknown model_type.
size_t first_position(const nlohmann::json& config);

std::vector<std::string> registered_model_types();
std::vector<std::string> registered_architectures(const std::string& model_type);

// The config.json of `model_type`'s preset `size`; throws naming both when either is unknown.
nlohmann::json preset_config(const std::string& model_type, const std::string& size);

// `model_type`'s pre-training architectures (FamilyEntry::pretraining); throws for an unknown family.
std::vector<std::pair<SentenceTask, std::string>> pretraining_architectures(const std::string& model_type);

// Builds the model config.json describes: its family by "model_type", its class by
// `architecture` when given, else the first of "architectures", else the family's first. Unknown
// names throw, listing the registered ones.
std::unique_ptr<PretrainedModel> build_model(const nlohmann::json& config, const std::string& source,
                                             const std::string& architecture = "");

}  // namespace xg::models
