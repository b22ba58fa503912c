#pragma once
// Finite-difference gradient checking for the tests.
#include <functional>
#include <vector>

#include "autograd/xgrad.hpp"

namespace xg::test {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradCheckOptions {
  float eps = 1e-2f;      // central-difference step
  double atol = 2e-3;     // |numeric - analytic| <= atol + rtol * max(|numeric|, |analytic|)
  double rtol = 2e-2;
  size_t max_checks = 48; // elements probed per input (drawn at random, a fixed seed, over the whole tensor)
};

// Checks the gradient of L = sum(w * f(inputs)), w a fixed random tensor, with respect to every
// input that requires grad: backward() against central differences with L accumulated in
// double. Fails the current Catch2 test on a mismatch, naming the input and element.
void check_gradients(const Fn& f, std::vector<Tensor> inputs, GradCheckOptions opt = {});

// Random normal tensor with requires_grad set, from a fixed seed.
Tensor randn(const Shape& shape, uint64_t seed, float scale = 1.f);
// Values bounded away from 0 by at least `gap` (for log, sqrt, div and the ReLU kink).
Tensor rand_away_from_zero(const Shape& shape, uint64_t seed, float gap = 0.2f, bool positive = false);

}  // namespace xg::test
