// The families compiled into the library. Adding one: write models/<family>/<family>_family.cpp with a
// <family>_family() entry and list it here; loaders, trainers and programs stay unchanged.
#include "models/core/registry.hpp"

namespace xg::models {

FamilyEntry bert_family();
FamilyEntry roberta_family();
FamilyEntry albert_family();
FamilyEntry electra_family();

std::vector<FamilyEntry> builtin_families() { return {bert_family(), roberta_family(), albert_family(), electra_family()}; }

std::string default_model_type() { return "bert"; }

}  // namespace xg::models
