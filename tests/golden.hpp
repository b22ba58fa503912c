#pragma once
// Reading PyTorch goldens (tests/data/*.json, written by tools/gen_*_goldens.py) and comparing.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "autograd/tensor.hpp"
#include "models/core/model_inputs.hpp"
#include "models/core/pretrained.hpp"
#include "models/core/pretraining.hpp"
#include "nn/safetensors.hpp"

namespace xg::test {

// Parses tests/data/<name>; fails with the path when it is missing or not JSON.
nlohmann::json load_golden(const std::string& name);
// {"shape": [...], "data": [...]} -> Tensor.
Tensor golden_tensor(const nlohmann::json& j, bool requires_grad = false);
// A tensor of tests/data/nn_goldens.safetensors (tools/gen_nn_goldens.py); fails if absent.
const Tensor& nn_golden(const std::string& name);

// Largest |a - b| over all elements, divided by max(floor, largest |b|); fails on a shape mismatch.
double max_scaled_error(const Tensor& a, const Tensor& b, double floor = 1.0);
// The floor for a parameter gradient against its golden: relative to the gradient's own size down
// to 1e-3. With a floor of 1, a gradient below 1e-3 (query biases, some ALBERT and RoBERTa weights)
// passed a 1e-3 check whatever it held. Key biases, zero up to rounding (goldens of 3e-8 to 6e-8,
// differences of 6e-8 that depend on the kernels' order), need a floor: at 1e-4 they used two
// thirds of a 1e-3 check.
constexpr double kGradientFloor = 1e-3;
// The same over the real positions only: a and b are (B, T, ...), attention_mask (B, T) 0/1 or
// undefined (all real). The fused inference path leaves padded positions zero, which no head reads.
double max_scaled_error_real(const Tensor& a, const Tensor& b, const Tensor& attention_mask);

// An int64 tensor (ids, labels) of `values`; 1-D unless a shape is given.
inline Tensor ints(const std::vector<int64_t>& values, Shape shape = {}) {
  return Tensor::from_ints(values, shape.empty() ? Shape{values.size()} : shape);
}

// Hugging Face's MLM labels (any shape, -100 where nothing is predicted) as pre-training targets:
// the flat positions and ids of the rest; sentence_labels (B), or undefined without a sentence task.
models::PretrainingTargets pretraining_targets(const Tensor& labels, const Tensor& sentence_labels = Tensor());

// m's forward_pretraining (the path bert_pretrain trains, the sparse last layer included) against
// transformers' goldens: the loss within 1e-5 and every parameter gradient within 1e-3 of
// golden_grad(name). Zeroes m's gradients first; returns the largest gradient error.
double check_pretraining_parity(models::PretrainedModel& m, const models::ModelInputs& in,
                                const models::PretrainingTargets& t, float golden_loss,
                                const std::function<Tensor(const std::string&)>& golden_grad);

// A goldens.safetensors of a model family (tools/gen_*_goldens.py): float and int64 tensors by name,
// and the model inputs stored as input_ids<suffix>, attention_mask<suffix> and, when present,
// token_type_ids<suffix>.
struct SafetensorsGolden {
  explicit SafetensorsGolden(const std::string& path) : file(nn::safetensors::read(path)) {}
  nn::safetensors::File file;
  Tensor f(const std::string& n) const { return nn::safetensors::to_float(file.tensors.at(n), n); }
  Tensor i(const std::string& n) const {
    const auto& e = file.tensors.at(n);
    return Tensor::from_ints(nn::safetensors::to_int64(e, n), e.shape);
  }
  models::ModelInputs inputs(const std::string& suffix = "") const {
    const auto& ids = file.tensors.at("input_ids" + suffix);
    const std::string types = "token_type_ids" + suffix;
    return models::make_inputs(ids.shape[0], ids.shape[1], i("input_ids" + suffix).to_ints(),
                               file.tensors.count(types) ? i(types).to_ints() : std::vector<int64_t>{},
                               i("attention_mask" + suffix).to_ints());
  }
};

}  // namespace xg::test
