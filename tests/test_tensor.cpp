#include <catch2/catch.hpp>

#include "autograd/tensor_xt.hpp"
#include "autograd/xgrad.hpp"

using namespace xg;
using Catch::Matchers::Contains;

TEST_CASE("tensor creation", "[tensor]") {
  Tensor z = Tensor::zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.numel() == 6);
  CHECK(z.to_vector() == std::vector<float>(6, 0.f));
  CHECK(Tensor::ones({4}).to_vector() == std::vector<float>(4, 1.f));
  CHECK(Tensor::full({2}, 3.5f).to_vector() == std::vector<float>{3.5f, 3.5f});
  CHECK(Tensor::arange(4).to_vector() == std::vector<float>{0, 1, 2, 3});
  CHECK(Tensor::scalar(2.f).dim() == 0);
  CHECK(Tensor::scalar(2.f).item() == 2.f);
  Tensor v = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2});
  CHECK(v.size(-1) == 2);
  CHECK(v.size(0) == 3);
  xt::xarray<float> a = to_xarray(v);
  CHECK(a(2, 1) == 6.f);
  CHECK(from_xarray(a).to_vector() == v.to_vector());
  CHECK(from_xarray(a, true).requires_grad());
  CHECK(xt_view(v)(1, 0) == 3.f);
}

TEST_CASE("seeded random tensors are reproducible and have the right moments", "[tensor]") {
  Generator g1(42), g2(42), g3(43);
  Tensor a = Tensor::normal({10000}, 1.f, 2.f, g1), b = Tensor::normal({10000}, 1.f, 2.f, g2);
  CHECK(a.to_vector() == b.to_vector());
  CHECK(a.to_vector() != Tensor::normal({10000}, 1.f, 2.f, g3).to_vector());
  const float m = mean(a).item();
  const float sd = std::sqrt(mean(pow(a - m, 2.f)).item());
  CHECK(m == Approx(1.f).margin(0.06));
  CHECK(sd == Approx(2.f).margin(0.06));
  Tensor u = Tensor::uniform({10000}, -2.f, 3.f, g1);
  CHECK(max(u, 0).item() < 3.f);
  CHECK(-max(-u, 0).item() >= -2.f);
  CHECK(mean(u).item() == Approx(0.5f).margin(0.05));
  // Generator state round trip
  Generator g(9);
  g.normal();
  const auto st = g.state();
  const float next = g.normal();
  g.set_state(st);
  CHECK(g.normal() == next);
}

TEST_CASE("reshape shares data, clone and detach", "[tensor]") {
  Tensor x = Tensor::arange(6);
  Tensor r = x.reshape({2, -1});
  CHECK(r.shape() == Shape{2, 3});
  CHECK(r.same_storage(x));
  Tensor c = x.clone();
  CHECK_FALSE(c.same_storage(x));
  CHECK(c.to_vector() == x.to_vector());
  Tensor p = Tensor::ones({2}, true);
  Tensor y = p * 2.f;
  CHECK(y.requires_grad());
  CHECK_FALSE(y.is_leaf());
  Tensor d = y.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK(d.same_storage(y));
  CHECK_THROWS_WITH(x.reshape({4, -1}), Contains("[reshape]") && Contains("[6]"));
  CHECK_THROWS_WITH(x.item(), Contains("[item]"));
  CHECK_THROWS_WITH(y.requires_grad_(false), Contains("leaf"));
}

TEST_CASE("forward values of ops", "[tensor][ops]") {
  Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from_vector({10, 20, 30}, {3});
  CHECK((a + b).to_vector() == std::vector<float>{11, 22, 33, 14, 25, 36});
  CHECK(sum(a, {0}).to_vector() == std::vector<float>{5, 7, 9});
  CHECK(sum(a, {1}, true).shape() == Shape{2, 1});
  CHECK(max(a, 1).to_vector() == std::vector<float>{3, 6});
  CHECK(transpose(a, 0, 1).to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(slice(a, 1, 1, 3).to_vector() == std::vector<float>{2, 3, 5, 6});
  CHECK(concat({a, a}, 0).shape() == Shape{4, 3});
  CHECK(index_select(a, 1, {2, 0}).to_vector() == std::vector<float>{3, 1, 6, 4});
  CHECK(matmul(a, a, false, true).to_vector() == std::vector<float>{14, 32, 32, 77});
  CHECK(masked_fill(a, Tensor::from_vector({1, 0, 0}, {3}), -1.f).to_vector() ==
        std::vector<float>{-1, 2, 3, -1, 5, 6});
  CHECK(relu(a - 3.f).to_vector() == std::vector<float>{0, 0, 0, 1, 2, 3});
  Tensor s = softmax(a);
  CHECK(sum(s, {1}).to_vector()[0] == Approx(1.f));
  CHECK(gelu(Tensor::scalar(1.f)).item() == Approx(0.8413447f));
  CHECK(gelu(Tensor::scalar(1.f), GeluApprox::Tanh).item() == Approx(0.8411920f));
  // -inf masking stays exact (no fast-math)
  Tensor inf_masked = softmax(Tensor::from_vector({0.f, -INFINITY, 0.f}, {3}));
  CHECK(inf_masked.to_vector() == std::vector<float>{0.5f, 0.f, 0.5f});
}
