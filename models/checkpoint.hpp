#pragma once
// Hugging Face checkpoint directories: config.json + model.safetensors (+ tokenizer files), loadable by
// transformers' BertForPreTraining.from_pretrained and back.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/bert.hpp"

namespace xg::models {

// Writes config.json and model.safetensors (F32, HF names, the tied decoder stored once as the word
// embeddings); `extra(tmp_dir)` may add files (the tokenizer's, training state). Everything goes to a temporary directory that then replaces `dir`, so a crash leaves
// either the old checkpoint or the new one, never a mix.
void save_pretrained(const BertForPreTraining& model, const std::string& dir,
                     const std::function<void(const std::string& tmp_dir)>& extra = nullptr);

struct LoadedBert {
  std::unique_ptr<BertForPreTraining> model;
  std::vector<std::string> notes;  // e.g. "pre-training heads not in the checkpoint: initialised randomly"
  std::map<std::string, std::string> file_names;  // parameter name -> its name in the checkpoint file
};

// Reads DIR/config.json and DIR/model.safetensors. Accepts BertForPreTraining names and bare
// BertModel names (with or without "bert."), TF-era LayerNorm gamma/beta, F32/F16/BF16 weights;
// ignores position_ids and the tied decoder copies. Missing encoder weights, unknown names or
// wrong shapes throw, naming the file and the tensors.
LoadedBert load_pretrained(const std::string& dir, uint64_t seed_for_missing_heads = 0);

// The checkpoint name a tensor should have in this model (the mapping above), or "" to skip it.
std::string canonical_bert_name(const std::string& name);

}  // namespace xg::models
