// Finite-difference gradient tests: element-wise ops (with broadcasting) and reductions.
#include <catch2/catch.hpp>

#include "autograd/kernels/vec.hpp"
#include "nn/layers.hpp"
#include "tests/gradcheck.hpp"

using namespace xg;
using xg::test::check_gradients;
using xg::test::rand_away_from_zero;
using xg::test::randn;
using V = std::vector<Tensor>;

TEST_CASE("grad: add/sub/mul/div, same shape", "[grad][elementwise]") {
  const Tensor a = randn({3, 5}, 1), b = rand_away_from_zero({3, 5}, 2, 0.5f);
  check_gradients([](const V& x) { return add(x[0], x[1]); }, {a, b});
  check_gradients([](const V& x) { return sub(x[0], x[1]); }, {a, b});
  check_gradients([](const V& x) { return mul(x[0], x[1]); }, {a, b});
  check_gradients([](const V& x) { return div(x[0], x[1]); }, {a, b});
}

TEST_CASE("grad: binary ops broadcast in both directions", "[grad][elementwise]") {
  // [3,1,4] with [2,4] -> [3,2,4]: a stretches axis 1, b gains a leading axis.
  const Tensor a = randn({3, 1, 4}, 3), b = rand_away_from_zero({2, 4}, 4, 0.5f);
  check_gradients([](const V& x) { return add(x[0], x[1]); }, {a, b});
  check_gradients([](const V& x) { return sub(x[1], x[0]); }, {a, b});
  check_gradients([](const V& x) { return mul(x[0], x[1]); }, {a, b});
  check_gradients([](const V& x) { return div(x[0], x[1]); }, {a, b});
  // bias-style [N, C] + [C], a column [N, 1], and a 0-d scalar
  const Tensor m = randn({4, 6}, 5), bias = randn({6}, 6), col = rand_away_from_zero({4, 1}, 7),
               s = rand_away_from_zero({}, 8);
  check_gradients([](const V& x) { return add(x[0], x[1]); }, {m, bias});
  check_gradients([](const V& x) { return div(x[0], x[1]); }, {m, col});
  check_gradients([](const V& x) { return mul(x[1], x[0]); }, {m, s});
}

TEST_CASE("grad: unary maps", "[grad][elementwise]") {
  const Tensor x = randn({4, 9}, 10);
  const Tensor pos = rand_away_from_zero({4, 9}, 11, 0.3f, /*positive=*/true);
  const Tensor kinked = rand_away_from_zero({4, 9}, 12, 0.1f);  // no element near ReLU's kink
  check_gradients([](const V& v) { return neg(v[0]); }, {x});
  check_gradients([](const V& v) { return exp(v[0]); }, {x});
  check_gradients([](const V& v) { return log(v[0]); }, {pos});
  check_gradients([](const V& v) { return sqrt(v[0]); }, {pos});
  check_gradients([](const V& v) { return tanh(v[0]); }, {x});
  check_gradients([](const V& v) { return sigmoid(v[0]); }, {x});
  check_gradients([](const V& v) { return relu(v[0]); }, {kinked});
  check_gradients([](const V& v) { return gelu(v[0]); }, {x});
  check_gradients([](const V& v) { return gelu(v[0], GeluApprox::Tanh); }, {x});
  for (float p : {2.f, 3.f, 0.5f, -1.5f})
    check_gradients([p](const V& v) { return pow(v[0], p); }, {pos});
  // integer exponents over negative bases, and the exact derivative at 0 (past the SIMD width)
  for (float p : {2.f, 3.f}) check_gradients([p](const V& v) { return pow(v[0], p); }, {x});
  const Tensor zeros = Tensor::zeros({20}, true);
  sum(pow(zeros, 1.f)).backward();
  CHECK(zeros.grad().to_vector() == std::vector<float>(20, 1.f));
  CHECK(pow(Tensor::zeros({20}), 0.f).to_vector() == std::vector<float>(20, 1.f));
  const Tensor at_zero = Tensor::zeros({20}, true);  // x^0 is constant: a zero gradient, not 0 * 0^-1 = NaN
  sum(pow(at_zero, 0.f)).backward();
  CHECK(at_zero.grad().to_vector() == std::vector<float>(20, 0.f));
}

TEST_CASE("grad: every unary kernel with a backward kernel, and every activation, from the op table", "[grad][elementwise]") {
  // Rows of autograd/kernels/unary_ops.def: a new row is checked here without another line.
  const std::vector<vec::Unary> rows = {
#define XG_UNARY(name, ...) vec::Unary::name,
#include "autograd/kernels/unary_ops.def"
#undef XG_UNARY
  };
  // away from 0 (ReLU's kink), inside (0, inf) for log and sqrt were they to gain a backward kernel
  const Tensor x = rand_away_from_zero({4, 9}, 13, 0.1f, /*positive=*/false);
  size_t with_kernel = 0, activations = 0;
  for (vec::Unary op : rows) {
    INFO(vec::op_name(op));
    if (!vec::has_backward_kernel(op)) {
      CHECK_THROWS_WITH(apply_unary(op, x), Catch::Matchers::Contains("no backward kernel"));
      continue;
    }
    ++with_kernel;
    check_gradients([op](const V& v) { return apply_unary(op, v[0]); }, {x});
    std::string name;
    try {
      name = nn::activation_name(op);
    } catch (const std::invalid_argument&) {
      continue;  // a kernel that is no activation (sigmoid)
    }
    ++activations;
    CHECK(nn::activation_from_name(name) == op);
    CHECK(nn::activate(x, op).to_vector() == apply_unary(op, x).to_vector());
  }
  CHECK(with_kernel == 5);  // tanh, sigmoid, relu and the two GELUs
  CHECK(activations == 4);
  CHECK(nn::activation_from_name("gelu_pytorch_tanh") == vec::Unary::GeluTanh);
  CHECK_THROWS_WITH(nn::activation_from_name("swish"), Catch::Matchers::Contains("known: tanh, relu, gelu, gelu_new"));
}

TEST_CASE("grad: scalar operators", "[grad][elementwise]") {
  const Tensor x = rand_away_from_zero({5}, 13, 0.5f);
  check_gradients([](const V& v) { return (2.f - v[0] * 3.f) / 4.f + 1.f; }, {x});
  check_gradients([](const V& v) { return 2.f / v[0]; }, {x});
  check_gradients([](const V& v) { return -v[0]; }, {x});
  // each of the twelve operator overloads on its own (above, some only inside one expression)
  check_gradients([](const V& v) { return v[0] - 2.5f; }, {x});
  check_gradients([](const V& v) { return 2.5f + v[0]; }, {x});
  check_gradients([](const V& v) { return -1.5f * v[0]; }, {x});
  check_gradients([](const V& v) { return 1.5f - v[0]; }, {x});
}

TEST_CASE("grad: a tensor used twice accumulates", "[grad][engine]") {
  const Tensor x = randn({3, 4}, 14);
  check_gradients([](const V& v) { return add(mul(v[0], v[0]), exp(v[0])); }, {x});
  // x feeds a matmul from both sides
  const Tensor sq = randn({4, 4}, 15);
  check_gradients([](const V& v) { return matmul(v[0], v[0]); }, {sq});
}

TEST_CASE("grad: sum and mean over axes, keepdim or not", "[grad][reduce]") {
  const Tensor x = randn({2, 3, 4}, 20);
  check_gradients([](const V& v) { return sum(v[0]); }, {x});
  check_gradients([](const V& v) { return sum(v[0], {1}); }, {x});
  check_gradients([](const V& v) { return sum(v[0], {0, 2}, true); }, {x});
  check_gradients([](const V& v) { return sum(v[0], {-1}); }, {x});
  check_gradients([](const V& v) { return mean(v[0]); }, {x});
  check_gradients([](const V& v) { return mean(v[0], {1, 2}, true); }, {x});
}

TEST_CASE("grad: max over an axis", "[grad][reduce]") {
  // Distinct values spaced well beyond eps, so no finite difference crosses a tie.
  Tensor x = Tensor::empty({3, 4, 5});
  Generator g(21);
  std::vector<float> vals(x.numel());
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = 0.1f * float(i);
  for (size_t i = vals.size(); i-- > 1;) std::swap(vals[i], vals[g.below(i + 1)]);
  std::copy(vals.begin(), vals.end(), x.data());
  x.requires_grad_(true);
  check_gradients([](const V& v) { return max(v[0], 1); }, {x});
  check_gradients([](const V& v) { return max(v[0], -1, true); }, {x});
  check_gradients([](const V& v) { return max(v[0], 0); }, {x});
}
