// Errors users can cause name the op and the offending shapes or values.
#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/xgrad.hpp"

using namespace xg;
using Catch::Matchers::Contains;

TEST_CASE("shape mismatches name the op and the shapes", "[errors]") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 3});
  CHECK_THROWS_WITH(add(a, b), Contains("[add]") && Contains("[2, 3]") && Contains("[4, 3]"));
  CHECK_THROWS_WITH(mul(a, Tensor::zeros({2})), Contains("[mul]") && Contains("[2]"));
  CHECK_THROWS_WITH(matmul(a, b), Contains("[matmul]") && Contains("[2, 3]") && Contains("[4, 3]"));
  CHECK_THROWS_WITH(matmul(Tensor::zeros({3}), a), Contains("[matmul]") && Contains("at least 2"));
  CHECK_THROWS_WITH(concat({a, Tensor::zeros({2, 4})}, 0), Contains("[concat]") && Contains("[2, 4]"));
  CHECK_THROWS_WITH(split(a, {1, 1}, 1), Contains("[split]") && Contains("2"));
  CHECK_THROWS_WITH(layer_norm(a, Tensor::ones({2}), Tensor()), Contains("[layer_norm]") && Contains("[2]"));
  CHECK_THROWS_WITH(mse_loss(a, b), Contains("[mse_loss]"));
  CHECK_THROWS_WITH(expand(a, {2, 5}), Contains("[expand]"));
  CHECK_THROWS_WITH(masked_fill(a, Tensor::zeros({3, 2, 3}), 0.f), Contains("[masked_fill]"));
  CHECK_THROWS_WITH(Tensor::from_vector({1, 2, 3}, {2, 2}), Contains("[from_vector]") && Contains("[2, 2]"));
  CHECK_THROWS_WITH(cross_entropy(a, {0}), Contains("[cross_entropy]") && Contains("1 targets"));
  // a tensor of targets: flat, or the logits' shape without the class axis (six targets in (3, 2)
  // would pair with the wrong rows of (2, 3, 5))
  const Tensor logits = Tensor::zeros({2, 3, 5});
  CHECK_THROWS_WITH(cross_entropy(logits, Tensor::from_ints({0, 1, 2, 3, 4, 0}, {3, 2})),
                    Contains("[cross_entropy] targets [3, 2] for logits [2, 3, 5]"));
  CHECK(cross_entropy(logits, Tensor::from_ints({0, 1, 2, 3, 4, 0}, {2, 3})).item() == Approx(std::log(5.f)));
  CHECK(cross_entropy(logits, Tensor::from_ints({0, 1, 2, 3, 4, 0}, {6})).item() == Approx(std::log(5.f)));
  // no classes: rows are still counted from the leading shape
  CHECK_THROWS_WITH(cross_entropy(Tensor::zeros({3, 0}), {0, -100, -100}), Contains("target 0 at row 0 is not a class in [0, 0)"));
  CHECK(std::isnan(cross_entropy(Tensor::zeros({3, 0}), {-100, -100, -100}).item()));  // none kept, as PyTorch
  CHECK(cross_entropy(Tensor::zeros({3, 0}), {-100, -100, -100}, -100, Reduction::None).to_vector() ==
        std::vector<float>(3, 0.f));
}

TEST_CASE("out-of-range indices and axes name the op and the value", "[errors]") {
  Tensor a = Tensor::zeros({2, 3});
  CHECK_THROWS_AS(index_select(a, 1, {0, 3}), std::out_of_range);
  CHECK_THROWS_WITH(index_select(a, 1, {0, 3}), Contains("[index_select]") && Contains("index 3"));
  CHECK_THROWS_WITH(embedding(a, {-1}, {1}), Contains("[embedding]") && Contains("-1"));
  CHECK_THROWS_WITH(cross_entropy(a, {0, 7}), Contains("[cross_entropy]") && Contains("target 7"));
  CHECK_THROWS_WITH(sum(a, {2}), Contains("[sum]") && Contains("axis 2"));
  CHECK_THROWS_WITH(softmax(a, -3), Contains("[softmax]") && Contains("-3"));
  CHECK_THROWS_WITH(transpose(a, 0, 5), Contains("[transpose]"));
  CHECK_THROWS_WITH(a.size(3), Contains("[Tensor::size]"));
  CHECK_THROWS_WITH(dropout(a, 1.5f, true), Contains("[dropout]") && Contains("1.5"));
  CHECK_THROWS_WITH(permute(a, {0, 0}), Contains("[permute]"));
}
