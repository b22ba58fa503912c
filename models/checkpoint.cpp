#include "models/checkpoint.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

namespace fs = std::filesystem;

namespace xg::models {

void save_pretrained(const BertForPreTraining& model, const std::string& dir,
                     const std::function<void(const std::string&)>& extra) {
  const fs::path target(dir);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  const fs::path tmp = fs::path(dir + fmt::format(".tmp.{}", ::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    model.config.save((tmp / "config.json").string());
    nn::safetensors::write((tmp / "model.safetensors").string(), model.state_dict(), {{"format", "pt"}});
    if (extra) extra(tmp.string());
    // Swap: the old checkpoint moves aside, the new one takes its name, the old one goes.
    const fs::path old = fs::path(dir + fmt::format(".old.{}", ::getpid()));
    fs::remove_all(old);
    if (fs::exists(target)) fs::rename(target, old);
    fs::rename(tmp, target);
    fs::remove_all(old);
  } catch (const std::exception& e) {
    fs::remove_all(tmp);
    throw std::runtime_error(fmt::format("[save_pretrained] {}: {}", dir, e.what()));
  }
}

std::string canonical_bert_name(const std::string& name) {
  std::string n = name;
  if (n == "bert.embeddings.position_ids" || n == "embeddings.position_ids" || n == "cls.predictions.decoder.weight")
    return "";
  if (n.rfind("embeddings.", 0) == 0 || n.rfind("encoder.", 0) == 0 || n.rfind("pooler.", 0) == 0) n = "bert." + n;
  auto ends = [&](const std::string& s) { return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0; };
  if (ends("LayerNorm.gamma")) n.replace(n.size() - 5, 5, "weight");
  else if (ends("LayerNorm.beta")) n.replace(n.size() - 4, 4, "bias");
  if (n == "cls.predictions.decoder.bias") n = "cls.predictions.bias";
  return n;
}

LoadedBert load_pretrained(const std::string& dir, uint64_t seed) {
  const fs::path d(dir);
  const std::string config_path = (d / "config.json").string(), weights_path = (d / "model.safetensors").string();
  if (!fs::is_directory(d)) throw std::runtime_error(fmt::format("[load_pretrained] {}: not a directory", dir));
  if (!fs::exists(weights_path))
    throw std::runtime_error(fmt::format("[load_pretrained] {}: no model.safetensors (pytorch_model.bin is not supported)", dir));
  LoadedBert out;
  out.model = std::make_unique<BertForPreTraining>(BertConfig::from_file(config_path));
  Generator gen(seed);
  out.model->init_weights(gen);
  nn::StateDict state;
  for (auto& [name, t] : nn::safetensors::read_float_tensors(weights_path)) {
    const std::string n = canonical_bert_name(name);
    if (n.empty()) continue;
    if (state.count(n) && n == "cls.predictions.bias") continue;  // decoder.bias duplicates the bias
    state[n] = t;
    out.file_names[n] = name;
  }
  const nn::LoadReport report = out.model->load_state_dict(state, /*strict=*/false);
  std::vector<std::string> missing_body, missing_heads;
  for (const auto& m : report.missing) (m.rfind("cls.", 0) == 0 ? missing_heads : missing_body).push_back(m);
  if (!missing_body.empty() || !report.unexpected.empty() || !report.mismatched.empty()) {
    nn::LoadReport bad{missing_body, report.unexpected, report.mismatched};
    throw std::runtime_error(fmt::format("[load_pretrained] {}: {}", weights_path, bad.str()));
  }
  if (!missing_heads.empty())
    out.notes.push_back(fmt::format("{} pre-training head tensors are not in the checkpoint (a bare BertModel?): "
                                    "initialised randomly", missing_heads.size()));
  return out;
}

}  // namespace xg::models
