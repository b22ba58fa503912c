// Finite-difference gradient tests: shape ops, gathers, where/masked_fill and matmul (including
// transposed and sliced operands).
#include <catch2/catch.hpp>

#include "tests/gradcheck.hpp"

using namespace xg;
using xg::test::check_gradients;
using xg::test::randn;
using V = std::vector<Tensor>;

TEST_CASE("grad: reshape, permute, transpose", "[grad][shape]") {
  const Tensor x = randn({2, 3, 4}, 30);
  check_gradients([](const V& v) { return mul(reshape(v[0], {4, -1}), reshape(v[0], {4, 6})); }, {x});
  check_gradients([](const V& v) { return permute(v[0], {2, 0, 1}); }, {x});
  check_gradients([](const V& v) { return transpose(v[0], 0, -1); }, {x});
}

TEST_CASE("grad: slice, concat, split", "[grad][shape]") {
  const Tensor x = randn({3, 7}, 31), y = randn({3, 2}, 32), z = randn({3, 1}, 33);
  check_gradients([](const V& v) { return slice(v[0], 1, 2, -1); }, {x});
  check_gradients([](const V& v) { return slice(v[0], 0, -2, 3); }, {x});
  check_gradients([](const V& v) { return concat({v[0], v[1], v[2]}, 1); }, {x, y, z});
  check_gradients(
      [](const V& v) {
        auto parts = split(v[0], {2, 4, 1}, 1);
        return add(mul(parts[0], parts[0]), sum(parts[1], {1}, true)) * parts[2];
      },
      {x});
}

TEST_CASE("grad: index_select and embedding scatter-add", "[grad][shape]") {
  const Tensor x = randn({5, 3}, 34);
  check_gradients([](const V& v) { return index_select(v[0], 0, {4, 0, 4, 2}); }, {x});
  check_gradients([](const V& v) { return index_select(v[0], 1, {2, 2, 1}); }, {x});
  const Tensor w = randn({6, 4}, 35);
  check_gradients([](const V& v) { return embedding(v[0], {1, 3, 3, 5, 0, 1}, {2, 3}); }, {w});
  const Tensor ids = Tensor::from_ints({1, 3, 3, 5, 0, 1}, {2, 3});  // ids as an int64 tensor (the models' inputs)
  check_gradients([&](const V& v) { return embedding(v[0], ids); }, {w});

  // padding_idx: its row gets no gradient even though it is looked up.
  Tensor w2 = randn({6, 4}, 36);
  sum(embedding(w2, {1, 2, 2, 0}, {4}, /*padding_idx=*/2)).backward();
  for (size_t j = 0; j < 4; ++j) {
    CHECK(w2.grad().data()[2 * 4 + j] == 0.f);
    CHECK(w2.grad().data()[1 * 4 + j] == 1.f);
  }
}

TEST_CASE("grad: expand, where, masked_fill", "[grad][shape]") {
  const Tensor x = randn({3, 1}, 37), a = randn({2, 3, 4}, 38), b = randn({3, 4}, 39);
  check_gradients([](const V& v) { return expand(v[0], {2, 3, 5}); }, {x});
  Tensor cond = Tensor::from_vector({1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0}, {3, 4});
  check_gradients([cond](const V& v) { return where(cond, v[0], v[1]); }, {a, b});
  Tensor mask = Tensor::from_vector({0, 1, 0, 0}, {1, 4});
  check_gradients([mask](const V& v) { return masked_fill(v[0], mask, -1e4f); }, {a});
}

TEST_CASE("grad: matmul 2-D, every transpose combination", "[grad][matmul]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const Tensor a = ta ? randn({5, 3}, 40) : randn({3, 5}, 40);
      const Tensor b = tb ? randn({4, 5}, 41) : randn({5, 4}, 41);
      INFO("trans_a " << ta << " trans_b " << tb);
      check_gradients([ta, tb](const V& v) { return matmul(v[0], v[1], ta, tb); }, {a, b});
    }
}

TEST_CASE("grad: batched matmul, shared 2-D operands, broadcast batches", "[grad][matmul]") {
  const Tensor a = randn({2, 3, 5}, 42), b = randn({2, 5, 4}, 43), bt = randn({2, 4, 5}, 44);
  check_gradients([](const V& v) { return matmul(v[0], v[1]); }, {a, b});
  check_gradients([](const V& v) { return matmul(v[0], v[1], false, true); }, {a, bt});
  check_gradients([](const V& v) { return matmul(v[0], v[1], true, false); }, {randn({2, 5, 3}, 45), b});
  // (B, T, K) @ W^T with W 2-D: the Linear-layer case, folded into one GEMM
  check_gradients([](const V& v) { return matmul(v[0], v[1], false, true); }, {a, randn({6, 5}, 46)});
  // 2-D @ batched
  check_gradients([](const V& v) { return matmul(v[0], v[1]); }, {randn({3, 5}, 47), b});
  // batch axes that broadcast: [2,1] with [1,3]
  check_gradients([](const V& v) { return matmul(v[0], v[1]); },
                  {randn({2, 1, 3, 5}, 48), randn({1, 3, 5, 2}, 49)});
}

TEST_CASE("grad: matmul of transposed and sliced inputs", "[grad][matmul]") {
  const Tensor x = randn({6, 5}, 50), w = randn({4, 6}, 51);
  check_gradients(
      [](const V& v) { return matmul(transpose(slice(v[0], 0, 1, 5), 0, 1), v[1], false, true); },
      {x, randn({3, 4}, 52)});
  check_gradients([](const V& v) { return matmul(slice(v[1], 1, 1, 6), slice(slice(v[0], 0, 1, 6), 1, 0, 3)); },
                  {x, w});
}

TEST_CASE("grad: fused linear with and without bias, 2-D and batched", "[grad][matmul]") {
  check_gradients([](const V& v) { return linear(v[0], v[1], v[2]); }, {randn({2, 3, 5}, 53), randn({4, 5}, 54), randn({4}, 55)});
  check_gradients([](const V& v) { return linear(v[0], v[1], Tensor()); }, {randn({6, 5}, 56), randn({3, 5}, 57)});
  Tensor x = randn({2, 5}, 58), w = randn({3, 5}, 59), b = randn({3}, 60);
  CHECK(linear(x, w, b).to_vector() == add(matmul(x, w, false, true), b).to_vector());
  CHECK_THROWS_WITH(linear(x, randn({3, 4}, 61), b), Catch::Matchers::Contains("[linear]"));
}

TEST_CASE("matmul and linear over zero-size axes: empty or zero gradients, no error", "[grad][matmul]") {
  // K = 0 (the product is zeros), N = 0 and batch rows 0, through the shared 2-D B fold.
  for (const auto& [a_shape, b_shape] : {std::pair{Shape{2, 3, 0}, Shape{0, 4}}, {Shape{2, 3, 4}, Shape{4, 0}},
                                         {Shape{0, 3, 4}, Shape{4, 5}}}) {
    INFO(shape_str(a_shape) << " @ " << shape_str(b_shape));
    Tensor a = Tensor::ones(a_shape).requires_grad_(true), b = Tensor::ones(b_shape).requires_grad_(true);
    Tensor out = matmul(a, b);
    CHECK(out.to_vector() == std::vector<float>(out.numel(), 0.f));
    sum(out).backward();
    CHECK(a.grad().shape() == a_shape);
    CHECK(b.grad().shape() == b_shape);
    CHECK(b.grad().to_vector() == std::vector<float>(b.numel(), 0.f));
  }
  Tensor x = Tensor::ones({2, 0}).requires_grad_(true), w = Tensor::ones({3, 0}).requires_grad_(true);
  Tensor y = linear(x, w, Tensor::ones({3}));
  CHECK(y.shape() == Shape{2, 3});
  CHECK(y.to_vector() == std::vector<float>(6, 1.f));  // bias only
  sum(y).backward();
  CHECK(w.grad().shape() == Shape{3, 0});
}
