#pragma once
// Reading PyTorch goldens (tests/data/*.json, written by tools/gen_*_goldens.py) and comparing.
#include <nlohmann/json.hpp>
#include <string>

#include "autograd/tensor.hpp"

namespace xg::test {

// Parses tests/data/<name>; fails with the path when it is missing or not JSON.
nlohmann::json load_golden(const std::string& name);
// {"shape": [...], "data": [...]} -> Tensor.
Tensor golden_tensor(const nlohmann::json& j, bool requires_grad = false);
// A tensor of tests/data/nn_goldens.safetensors (tools/gen_nn_goldens.py); fails if absent.
const Tensor& nn_golden(const std::string& name);

// Largest |a - b| over all elements, divided by max(1, largest |b|); fails on a shape mismatch.
double max_scaled_error(const Tensor& a, const Tensor& b);

// An int64 tensor (ids, labels) of `values`; 1-D unless a shape is given.
inline Tensor ints(const std::vector<int64_t>& values, Shape shape = {}) {
  return Tensor::from_ints(values, shape.empty() ? Shape{values.size()} : shape);
}

}  // namespace xg::test
