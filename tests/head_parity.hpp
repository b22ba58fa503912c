#pragma once
// Parity of a Hugging Face model saved by a generator in tools/ (config.json, model.safetensors,
// goldens.safetensors with a padded batch, its labels, outputs, loss and every parameter gradient):
// what tests/models/core/test_heads.cpp and each family's tests check.
#include <string>
#include <vector>

#include "models/core/model_inputs.hpp"
#include "nn/safetensors.hpp"

namespace xg::test {

struct HeadGolden {
  explicit HeadGolden(const std::string& dir);
  nn::safetensors::File file;
  bool has(const std::string& n) const { return file.tensors.count(n) > 0; }
  Tensor f(const std::string& n) const;
  Tensor i(const std::string& n) const;
  // Labels as the generator passed them: int64 ids or float targets.
  Tensor label(const std::string& n) const;
  // (B, T) inputs, or multiple choice's (B, C, T) as transformers takes them.
  models::ModelInputs inputs() const;
};

// The model in `dir` loaded as `architecture`: outputs within 1e-4, the loss, and every parameter's
// gradient within 1e-3 of transformers'; for a masked-LM pre-training model also what
// bert_pretrain trains (forward_pretraining, the sparse last layer included).
void check_head_parity(const std::string& dir, const std::string& architecture, const std::vector<std::string>& label_names,
                       const std::vector<std::string>& output_names);

}  // namespace xg::test
