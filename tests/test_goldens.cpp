// Composite computations against PyTorch 1.13 (tests/data/core_goldens.json from
// tools/gen_core_goldens.py). Errors are relative to the largest magnitude of each tensor.
#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/xgrad.hpp"
#include "tests/golden.hpp"

using namespace xg;
using xg::test::golden_tensor;
using xg::test::max_scaled_error;

namespace {
const nlohmann::json& cases() {
  static const nlohmann::json j = xg::test::load_golden("core_goldens.json").at("cases");
  return j;
}
}  // namespace

TEST_CASE("golden: softmax + cross_entropy with ignore_index", "[golden]") {
  for (auto [name, red] : {std::pair{"cross_entropy_mean", Reduction::Mean},
                           std::pair{"cross_entropy_sum", Reduction::Sum}}) {
    const auto& c = cases().at(name);
    Tensor logits = golden_tensor(c.at("logits"), true);
    Tensor loss = cross_entropy(logits, c.at("targets").get<std::vector<int64_t>>(), -100, red);
    loss.backward();
    INFO(name);
    CHECK(loss.item() == Approx(c.at("loss").get<double>()).epsilon(1e-5));
    CHECK(max_scaled_error(softmax(logits.detach()), golden_tensor(c.at("softmax"))) < 1e-6);
    CHECK(max_scaled_error(logits.grad(), golden_tensor(c.at("grad_logits"))) < 1e-6);
  }
}

TEST_CASE("golden: layer_norm forward and backward", "[golden]") {
  for (const char* name : {"layer_norm_small", "layer_norm_wide"}) {
    const auto& c = cases().at(name);
    Tensor x = golden_tensor(c.at("x"), true), w = golden_tensor(c.at("w"), true),
           b = golden_tensor(c.at("b"), true);
    Tensor y = layer_norm(x, w, b, c.at("eps").get<float>());
    y.backward(golden_tensor(c.at("grad_y")));
    INFO(name);
    CHECK(max_scaled_error(y, golden_tensor(c.at("y"))) < 1e-5);
    CHECK(max_scaled_error(x.grad(), golden_tensor(c.at("grad_x"))) < 1e-5);
    CHECK(max_scaled_error(w.grad(), golden_tensor(c.at("grad_w"))) < 1e-5);
    CHECK(max_scaled_error(b.grad(), golden_tensor(c.at("grad_b"))) < 1e-5);
  }
}

TEST_CASE("golden: masked attention + GELU + residual + MSE", "[golden]") {
  const auto& c = cases().at("attention_block");
  Tensor q = golden_tensor(c.at("q"), true), k = golden_tensor(c.at("k"), true),
         v = golden_tensor(c.at("v"), true), w1 = golden_tensor(c.at("w1"), true);
  const Tensor mask = golden_tensor(c.at("mask")), target = golden_tensor(c.at("target"));
  const float D = float(q.size(-1));
  Tensor scores = add(matmul(q, k, false, true) * (1.f / std::sqrt(D)), mask);
  Tensor ctx = matmul(softmax(scores), v);
  Tensor t = tanh(ctx);
  Tensor out = add(gelu(matmul(ctx, w1)), concat({t, t}, -1));
  Tensor loss = mse_loss(out, target);
  loss.backward();
  CHECK(max_scaled_error(out, golden_tensor(c.at("out"))) < 1e-5);
  CHECK(loss.item() == Approx(c.at("loss").get<double>()).epsilon(1e-5));
  CHECK(max_scaled_error(q.grad(), golden_tensor(c.at("grad_q"))) < 1e-5);
  CHECK(max_scaled_error(k.grad(), golden_tensor(c.at("grad_k"))) < 1e-5);
  CHECK(max_scaled_error(v.grad(), golden_tensor(c.at("grad_v"))) < 1e-5);
  CHECK(max_scaled_error(w1.grad(), golden_tensor(c.at("grad_w1"))) < 1e-5);
}

TEST_CASE("golden: bce_with_logits at extreme logits, log_softmax on an inner axis", "[golden]") {
  const auto& c = cases().at("bce_with_logits");
  Tensor x = golden_tensor(c.at("x"), true);
  Tensor loss = bce_with_logits(x, golden_tensor(c.at("y")));
  loss.backward();
  CHECK(std::isfinite(loss.item()));
  CHECK(loss.item() == Approx(c.at("loss").get<double>()).epsilon(1e-6));
  CHECK(max_scaled_error(x.grad(), golden_tensor(c.at("grad_x"))) < 1e-6);

  const auto& l = cases().at("log_softmax_axis1");
  Tensor z = golden_tensor(l.at("x"), true);
  Tensor y = log_softmax(z, 1);
  y.backward(golden_tensor(l.at("grad_y")));
  CHECK(max_scaled_error(y, golden_tensor(l.at("y"))) < 1e-6);
  CHECK(max_scaled_error(z.grad(), golden_tensor(l.at("grad_x"))) < 1e-6);
}
