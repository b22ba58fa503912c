#include "models/core/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <mutex>
#include <stdexcept>

#include "util/json_input.hpp"

namespace xg::models {

namespace {

struct Registry {
  explicit Registry(std::vector<FamilyEntry> builtins) {
    for (auto& f : builtins) add(std::move(f));
  }
  std::mutex mutex;
  std::vector<FamilyEntry> families;

  FamilyEntry* find(const std::string& model_type) {
    for (auto& f : families)
      if (f.model_type == model_type) return &f;
    return nullptr;
  }
  std::vector<std::string> model_types() const {
    std::vector<std::string> out;
    for (const auto& f : families) out.push_back(f.model_type);
    return out;
  }
  void add(FamilyEntry family) {
    if (find(family.model_type))
      throw std::invalid_argument(fmt::format("[registry] model_type '{}' is already registered", family.model_type));
    families.push_back(std::move(family));
  }
};

// Built on first use from builtin_families(): thread-safe, and independent of which object files
// the linker kept.
Registry& registry() {
  static Registry r(builtin_families());
  return r;
}

std::vector<std::string> names_of(const FamilyEntry& f) {
  std::vector<std::string> out;
  for (const auto& a : f.architectures) out.push_back(a.name);
  return out;
}

FamilyEntry& family_or_throw(Registry& r, const std::string& model_type, const std::string& source) {
  if (FamilyEntry* f = r.find(model_type)) return *f;
  throw std::invalid_argument(fmt::format("[registry] {}: unknown model_type '{}' (registered: {})", source, model_type,
                                          fmt::join(r.model_types(), ", ")));
}

}  // namespace

void register_family(FamilyEntry family) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.add(std::move(family));
}

void register_architecture(const std::string& model_type, ArchitectureEntry architecture) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  FamilyEntry& f = family_or_throw(r, model_type, "register_architecture");
  for (const auto& a : f.architectures)
    if (a.name == architecture.name)
      throw std::invalid_argument(fmt::format("[registry] architecture '{}' is already registered", architecture.name));
  f.architectures.push_back(std::move(architecture));
}

std::vector<std::string> registered_model_types() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.model_types();
}

std::vector<std::string> registered_architectures(const std::string& model_type) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return names_of(family_or_throw(r, model_type, "registered_architectures"));
}

std::vector<std::pair<SentenceTask, std::string>> pretraining_architectures(const std::string& model_type) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return family_or_throw(r, model_type, "pretraining_architectures").pretraining;
}

FamilyEntry family_entry(const std::string& model_type) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return family_or_throw(r, model_type, "family_entry");
}

std::string config_model_type(const nlohmann::json& config) {
  return config.is_object() && config.contains("model_type") && config["model_type"].is_string()
             ? config["model_type"].get<std::string>() : default_model_type();
}

size_t first_position(const nlohmann::json& config) {
  const std::string type = config_model_type(config);
  if (!family_entry(type).positions_follow_padding) return 0;
  const auto pad = config.find("pad_token_id");
  if (pad == config.end() || !pad->is_number_integer() || pad->get<int64_t>() < 0)
    throw std::invalid_argument(fmt::format("[registry] model_type '{}' counts positions from pad_token_id + 1, and the config "
                                            "has no non-negative integer pad_token_id (got {})", type,
                                            pad == config.end() ? std::string("none") : json_summary(*pad)));
  return size_t(pad->get<int64_t>()) + 1;
}

nlohmann::json preset_config(const std::string& model_type, const std::string& size) {
  Registry& r = registry();
  std::function<nlohmann::json(const std::string&)> preset;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    preset = family_or_throw(r, model_type, "preset_config").preset;
  }
  if (!preset) throw std::invalid_argument(fmt::format("[registry] model_type '{}' has no presets", model_type));
  return preset(size);
}

std::unique_ptr<PretrainedModel> build_model(const nlohmann::json& config, const std::string& source,
                                             const std::string& architecture) {
  Registry& r = registry();
  ArchitectureEntry entry;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string())
      throw std::invalid_argument(fmt::format("[registry] {}: no \"model_type\" string (registered: {})", source,
                                              fmt::join(r.model_types(), ", ")));
    const FamilyEntry& f = family_or_throw(r, config["model_type"].get<std::string>(), source);
    std::string name = architecture;
    if (name.empty() && config.contains("architectures") && !config["architectures"].is_null()) {  // null: unset
      const auto& a = config["architectures"];
      if (!a.is_array() || (!a.empty() && !a[0].is_string()))
        throw std::invalid_argument(fmt::format("[registry] {}: \"architectures\" must be a list of names, got {}", source, json_summary(a)));
      if (!a.empty()) name = a[0].get<std::string>();
    }
    if (name.empty()) name = f.architectures.at(0).name;
    for (const auto& a : f.architectures)
      if (a.name == name) entry = a;
    if (!entry.build)
      throw std::invalid_argument(fmt::format("[registry] {}: unknown architecture '{}' for model_type '{}' (registered: {})",
                                              source, name, f.model_type, fmt::join(names_of(f), ", ")));
  }
  return entry.build(config, source);
}

}  // namespace xg::models
