#include "models/core/checkpoint.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "models/core/config_fields.hpp"
#include "nn/sharded_checkpoint.hpp"
#include "nn/torch_pickle.hpp"
#include "util/atomic_file.hpp"
#include "util/strings.hpp"

namespace fs = std::filesystem;

namespace xg::models {

void save_pretrained(const PretrainedModel& model, const std::string& dir,
                     const std::function<void(const std::string&)>& extra) {
  write_directory_atomically(dir, "save_pretrained", [&](const std::string& tmp) {
    write_text_atomically((fs::path(tmp) / "config.json").string(), model.config_json().dump(2) + "\n");
    nn::safetensors::write((fs::path(tmp) / "model.safetensors").string(), model.hf_state_dict(), {{"format", "pt"}});
    if (extra) extra(tmp);
  });
}

std::optional<int64_t> checkpoint_step(const std::string& name) {
  constexpr std::string_view prefix = "checkpoint-";
  if (name.size() <= prefix.size() || name.size() > prefix.size() + 18 || name.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  int64_t step = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> numbered;
  if (fs::is_directory(dir))
    for (auto& e : fs::directory_iterator(dir))
      if (const auto step = checkpoint_step(e.path().filename().string())) numbered.emplace_back(*step, e.path().string());
  // By step, not by name: the 6-digit names of steps below a million sort before longer ones as text
  // only by luck ("checkpoint-1000000" < "checkpoint-999000").
  std::sort(numbered.begin(), numbered.end());
  std::vector<std::string> all;
  for (auto& [step, path] : numbered) all.push_back(std::move(path));
  return all;
}

std::string model_directory_in(const std::string& dir, std::string* note) {
  const fs::path d(dir);
  if (!fs::is_directory(d) || fs::exists(d / "config.json")) return dir;
  std::string found;
  if (fs::exists(d / "best" / "config.json")) found = (d / "best").string();
  const auto all = list_checkpoints(dir);
  for (auto it = all.rbegin(); found.empty() && it != all.rend(); ++it)
    if (fs::exists(fs::path(*it) / "config.json")) found = *it;
  if (found.empty()) return dir;
  if (note)
    *note = fmt::format("{} is a run's output directory: using {} ({})", dir, found,
                        fs::path(found).filename() == "best" ? "its best model" : "its newest checkpoint");
  return found;
}

LoadedModel load_pretrained(const std::string& dir, uint64_t seed, const std::string& architecture,
                            const nlohmann::json& config_overrides) {
  const fs::path d(dir);
  const std::string config_path = (d / "config.json").string();
  if (!fs::is_directory(d)) throw std::runtime_error(fmt::format("[load_pretrained] {}: not a directory", dir));
  // As transformers looks for them: safetensors first, whole or sharded by an index; else
  // PyTorch's pickle (read without executing it), whole or sharded.
  std::string weights_path;
  for (const char* name : {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json"})
    if (weights_path.empty() && fs::exists(d / name)) weights_path = (d / name).string();
  if (weights_path.empty())
    throw std::runtime_error(fmt::format("[load_pretrained] {}: no model.safetensors or pytorch_model.bin (nor a sharded one's "
                                         "index)", dir));
  const bool pickled = weights_path.find("pytorch_model.bin") != std::string::npos;
  std::map<std::string, std::string> integer_tensors;  // name -> dtype: a weight saved as integers is refused below
  const auto read_file = [pickled, &integer_tensors](const std::string& path) {
    nn::StateDict floats;
    for (const auto& [name, e] : pickled ? nn::torch_pickle::read(path) : nn::safetensors::read(path).tensors) {
      if (nn::safetensors::is_float(e.dtype)) floats[name] = nn::safetensors::to_float(e, name);
      else integer_tensors[name] = nn::safetensors::dtype_name(e.dtype);
    }
    return floats;
  };
  const bool sharded = ends_with(weights_path, ".index.json");
  LoadedModel out;
  nlohmann::json config = config::read_json_file(config_path, "load_pretrained");
  if (!config_overrides.is_object())
    throw std::invalid_argument(fmt::format("[load_pretrained] config overrides must be a JSON object, got {}", config_overrides.dump()));
  if (config.is_object()) {
    // A new label count replaces the saved labels, as transformers' num_labels setter does.
    if (config_overrides.contains("num_labels") && !config_overrides.contains("id2label")) {
      config.erase("id2label");
      config.erase("label2id");
    }
    config.update(config_overrides);
  }
  out.model = build_model(config, config_path, architecture);
  PretrainedModel& model = *out.model;
  // The language-model heads here decode with the word embeddings: an untied decoder's own weights
  // would be dropped without a word, and the logits would be wrong. (Other heads have no decoder.)
  const std::string arch = model.architecture();
  const bool decodes = arch.find("ForMaskedLM") != std::string::npos || arch.find("ForPreTraining") != std::string::npos;
  if (decodes && config.is_object() && config.contains("tie_word_embeddings") && config["tie_word_embeddings"] == false)
    throw std::invalid_argument(fmt::format("[load_pretrained] {}: tie_word_embeddings is false, and only {} decoders tied to "
                                            "the word embeddings are supported", config_path, arch));
  Generator gen(seed);
  model.init_weights(gen);
  nn::StateDict state;
  for (auto& [name, t] : sharded ? nn::read_sharded_tensors(weights_path, read_file) : read_file(weights_path)) {
    const std::string n = model.name_from_checkpoint(name);
    if (n.empty() || state.count(n)) continue;  // skipped, or a second name of a tied tensor
    state[n] = t;
    out.file_names[n] = name;
  }
  // A weight stored as integers would otherwise read as missing (and a head as new); integer
  // buffers (older checkpoints' position_ids) are left out as before.
  const nn::StateDict own = model.state_dict();
  for (const auto& [name, dtype] : integer_tensors)
    if (const std::string n = model.name_from_checkpoint(name); !n.empty() && own.count(n) && own.at(n).dtype() != Dtype::Int64)
      throw std::runtime_error(fmt::format("[load_pretrained] {}: '{}' is stored as {}, but it is the model's float weight '{}'",
                                           weights_path, name, dtype, n));
  // NaN or infinite weights load as they are only to make every output NaN: name the first.
  for (const auto& [n, t] : state)
    if (const auto i = nn::safetensors::first_nonfinite(t))
      throw std::runtime_error(fmt::format("[load_pretrained] {}: '{}' holds {} at element {} of {}: the checkpoint is corrupt",
                                           weights_path, out.file_names.at(n), t.contiguous().data()[*i], *i, t.numel()));
  const nn::LoadReport report = model.load_state_dict(state, /*strict=*/false);
  nn::LoadReport bad{{}, {}, report.mismatched};
  std::vector<std::string> missing_heads, unused_heads;
  for (const auto& m : report.missing) (model.is_head_tensor(m) ? missing_heads : bad.missing).push_back(m);
  for (const auto& u : report.unexpected) (model.is_head_tensor(u) ? unused_heads : bad.unexpected).push_back(u);
  if (!bad.ok()) throw std::runtime_error(fmt::format("[load_pretrained] {}: {}", weights_path, bad.str()));
  out.newly_initialised = missing_heads;
  for (const auto& u : unused_heads) out.dropped.push_back(out.file_names.at(u));  // by the checkpoint's names, as transformers
  for (const auto& u : unused_heads) out.file_names.erase(u);
  if (!missing_heads.empty())
    out.notes.push_back(fmt::format("{} head tensors of {} are not in the checkpoint (another architecture?): initialised "
                                    "randomly ({}, ...)", missing_heads.size(), model.architecture(), missing_heads.front()));
  if (!unused_heads.empty())
    out.notes.push_back(fmt::format("{} head tensors in the checkpoint are not used by {}: ignored ({}, ...)",
                                    unused_heads.size(), model.architecture(), unused_heads.front()));
  model.eval();  // as from_pretrained returns it: dropout off until the caller trains
  return out;
}

}  // namespace xg::models
