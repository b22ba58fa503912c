#pragma once
// Hugging Face checkpoint directories: config.json + model.safetensors (+ tokenizer files), for
// any registered family and architecture, loadable by transformers' from_pretrained and back.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "models/core/registry.hpp"

namespace xg::models {

// Writes config.json (the family's fields, model_type and architectures) and model.safetensors
// (F32, Hugging Face names, each tied tensor once); `extra(tmp_dir)` may add files (the
// tokenizer's, training state). Everything goes to a temporary directory that then replaces
// `dir`, so a crash leaves either the old checkpoint or the new one, never a mix.
void save_pretrained(const PretrainedModel& model, const std::string& dir,
                     const std::function<void(const std::string& tmp_dir)>& extra = nullptr);

// A loaded model as class M (PretrainedModel: whatever class config.json names).
template <class M = PretrainedModel>
struct Loaded {
  std::unique_ptr<M> model;
  std::vector<std::string> notes;  // e.g. "2 head tensors are not in the checkpoint: initialised randomly"
  // As transformers reports them: the model's head tensors the checkpoint lacked (newly
  // initialised) and the checkpoint's head tensors the model has no place for (dropped).
  std::vector<std::string> newly_initialised, dropped;
  std::map<std::string, std::string> file_names;  // parameter name -> its name in the checkpoint file

  Loaded() = default;
  // Takes over a model loaded as another class; throws when it is not an M.
  template <class From, class = std::enable_if_t<!std::is_same_v<From, M>>>
  Loaded(Loaded<From>&& other)
      : notes(std::move(other.notes)), newly_initialised(std::move(other.newly_initialised)), dropped(std::move(other.dropped)),
        file_names(std::move(other.file_names)) {
    M* m = dynamic_cast<M*>(other.model.get());
    if (!m)
      throw std::invalid_argument(fmt::format("[load_pretrained] the checkpoint holds a {}, not a {} (load it with "
                                              "load_pretrained_as to build that class from it)",
                                              other.model ? other.model->architecture() : "null model", M::kArchitecture));
    other.model.release();
    model.reset(m);
  }
};
using LoadedModel = Loaded<PretrainedModel>;

// Reads DIR/config.json and DIR/model.safetensors (or, without it, DIR/pytorch_model.bin through
// the restricted unpickler of nn/torch_pickle.hpp, which executes nothing) and builds, through the registry, the class
// config.json names, or `architecture` when given (as transformers' <Class>.from_pretrained:
// BertForPreTraining from a bare BertModel checkpoint). Accepts the names of any architecture of
// the family and older spellings (the family's name map) and F32/F16/BF16 weights. Head tensors
// the checkpoint lacks are initialised randomly (from `seed_for_missing_heads`) and head tensors
// the class lacks are ignored, each with a note; missing encoder weights, unknown names or wrong
// shapes throw, naming the file and the tensors. `config_overrides` replace config.json's keys
// before the model is built, as from_pretrained(dir, num_labels=3, id2label=...) does. The model
// comes back in eval mode, as transformers' does: call train() before training it.
// The step of a checkpoint directory's name ("checkpoint-000042": 42); none for other names
// (the .tmp/.old/.del directories of an unfinished save or removal among them).
std::optional<int64_t> checkpoint_step(const std::string& name);
// The checkpoint-N directories of a run's output directory, oldest (lowest step) first.
std::vector<std::string> list_checkpoints(const std::string& out_dir);

// The model directory a run's output directory stands for, where a checkpoint is wanted (--model,
// --init-from): `dir` itself when it holds a config.json; else DIR/best (a fine-tuning run's best
// model); else its newest checkpoint-N holding a config.json. `note`, when given, receives a line
// saying which was taken. `dir` unchanged when none fits (loading it then names what is missing).
std::string model_directory_in(const std::string& dir, std::string* note = nullptr);

LoadedModel load_pretrained(const std::string& dir, uint64_t seed_for_missing_heads = 0, const std::string& architecture = "",
                            const nlohmann::json& config_overrides = nlohmann::json::object());

template <class M>
Loaded<M> load_pretrained_as(const std::string& dir, uint64_t seed_for_missing_heads = 0,
                             const nlohmann::json& config_overrides = nlohmann::json::object()) {
  return load_pretrained(dir, seed_for_missing_heads, M::kArchitecture, config_overrides);
}

}  // namespace xg::models
