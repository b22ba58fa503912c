// The tensor core: dtypes and conversions, strided views (no copies, correct values and
// gradients), int64 ids and labels, engine hooks, EnableGradGuard and checkpoint().
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "autograd/precision.hpp"
#include "tests/gradcheck.hpp"

using namespace xg;
using xg::test::check_gradients;
using xg::test::randn;
using Catch::Matchers::Contains;
using V = std::vector<Tensor>;

namespace {
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto va = a.to_vector(), vb = b.to_vector();
  REQUIRE(va.size() == vb.size());
  double m = 0;
  for (size_t i = 0; i < va.size(); ++i) m = std::max(m, std::fabs(double(va[i]) - double(vb[i])));
  return m;
}
}  // namespace

TEST_CASE("dtype: bfloat16 rounds to nearest even as PyTorch does", "[tensor][dtype]") {
  // 1 + 2^-8 lies halfway between bf16 1.0 (0x3f80) and 1.0078125 (0x3f81): ties go to even.
  CHECK(float_to_bf16(from_bits(0x3f808000u)) == 0x3f80);
  // Halfway above an odd mantissa rounds up to the even one.
  CHECK(float_to_bf16(from_bits(0x3f818000u)) == 0x3f82);
  CHECK(float_to_bf16(from_bits(0x3f808001u)) == 0x3f81);  // just above half: up
  CHECK(float_to_bf16(from_bits(0x3f807fffu)) == 0x3f80);  // just below half: down
  CHECK(float_to_bf16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(float_to_bf16(from_bits(0x7f7fffffu)) == 0x7f80);  // FLT_MAX rounds to inf, as in PyTorch
  CHECK(bf16_to_float(float_to_bf16(-2.5f)) == -2.5f);
}

TEST_CASE("dtype: float16 conversions and round trips", "[tensor][dtype]") {
  CHECK(float_to_f16(1.f) == 0x3c00);
  CHECK(float_to_f16(65504.f) == 0x7bff);
  CHECK(float_to_f16(65520.f) == 0x7c00);            // rounds to inf
  CHECK(f16_to_float(0x0001) == std::ldexp(1.f, -24));  // smallest subnormal
  CHECK(float_to_f16(1.f + std::ldexp(1.f, -11)) == 0x3c00);  // tie to even
  // Every finite 16-bit value survives f16 -> f32 -> f16 and bf16 -> f32 -> bf16 exactly.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_float(uint16_t(h));
    if (!std::isnan(f)) REQUIRE(float_to_f16(f) == h);
    const float b = bf16_to_float(uint16_t(h));
    if (!std::isnan(b)) REQUIRE(float_to_bf16(b) == h);
  }
  // Between neighbours (subnormals included): the midpoint goes to the even one, a float either
  // side of it to the nearer one.
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    const float lo = f16_to_float(uint16_t(h)), hi = f16_to_float(uint16_t(h + 1)), mid = (lo + hi) / 2;
    REQUIRE(float_to_f16(mid) == ((h & 1) ? h + 1 : h));
    REQUIRE(float_to_f16(std::nextafter(mid, 0.f)) == h);
    REQUIRE(float_to_f16(std::nextafter(mid, hi)) == h + 1);
    REQUIRE(float_to_f16(-mid) == (0x8000u | ((h & 1) ? h + 1 : h)));
  }
  CHECK(float_to_f16(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(float_to_f16(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(std::isnan(f16_to_float(float_to_f16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(float_to_f16(std::ldexp(1.f, -26)) == 0);  // under half the smallest subnormal
}

TEST_CASE("dtype: tensors cast between float32, bfloat16, float16 and int64", "[tensor][dtype]") {
  const Tensor x = Tensor::from_vector({1.f, -2.75f, 3.0039062f, 1e-3f, 70000.f, -0.6f}, {2, 3});
  const Tensor b = x.to(Dtype::BFloat16), h = x.to(Dtype::Float16);
  Tensor i = x.to(Dtype::Int64);
  CHECK(b.dtype() == Dtype::BFloat16);
  CHECK(b.shape() == x.shape());
  const auto bv = b.to_vector(), hv = h.to_vector();
  for (size_t k = 0; k < 6; ++k) {
    CHECK(bv[k] == bf16_to_float(float_to_bf16(x.to_vector()[k])));
    CHECK(hv[k] == f16_to_float(float_to_f16(x.to_vector()[k])));
  }
  CHECK(std::isinf(hv[4]));  // 70000 overflows float16
  CHECK(i.to_ints() == std::vector<int64_t>{1, -2, 3, 0, 70000, 0});
  CHECK(b.to(Dtype::Float32).to_vector() == bv);
  // Kernels take float32 only, and say so.
  CHECK_THROWS_WITH(add(b, b), Contains("[add] expects a float32 tensor, got bfloat16"));
  CHECK_THROWS_WITH(i.requires_grad_(), Contains("int64 tensor cannot require grad"));
  CHECK_THROWS_WITH(dtype_from_name("f8"), Contains("unknown dtype 'f8'"));
}

TEST_CASE("dtype: the gradient of a cast is cast back", "[tensor][dtype][grad]") {
  Tensor x = randn({3, 4}, 1);
  Tensor y = mul(x.to(Dtype::BFloat16).to(Dtype::Float32), x);
  sum(y).backward();
  // d/dx (bf16(x) * x) with the cast's gradient passed straight through: bf16(x) + x
  const auto g = x.grad().to_vector(), xv = x.to_vector();
  for (size_t k = 0; k < g.size(); ++k) CHECK(g[k] == Approx(bf16_to_float(float_to_bf16(xv[k])) + xv[k]).epsilon(1e-2));
}

TEST_CASE("views: permute, transpose, slice, expand and reshape share storage", "[tensor][views]") {
  const Tensor x = Tensor::from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2});
  const Tensor p = permute(x, {2, 0, 1});
  CHECK(p.same_storage(x));
  CHECK_FALSE(p.is_contiguous());
  CHECK(p.shape() == Shape{2, 2, 3});
  CHECK(p.to_vector() == std::vector<float>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11});
  CHECK_THROWS_WITH(p.data(), Contains("strided view; call contiguous() first"));
  const Tensor pc = p.contiguous();
  CHECK(pc.is_contiguous());
  CHECK_FALSE(pc.same_storage(x));
  CHECK(pc.to_vector() == p.to_vector());

  const Tensor s = slice(x, 1, 1, 3);  // (2, 2, 2), starts at offset 2
  CHECK(s.same_storage(x));
  CHECK(s.offset() == 2);
  CHECK(s.to_vector() == std::vector<float>{2, 3, 4, 5, 8, 9, 10, 11});
  const Tensor ss = slice(transpose(x, 0, 2), 2, 1, 2);  // a view of a view
  CHECK(ss.to_vector() == contiguous(slice(contiguous(transpose(x, 0, 2)), 2, 1, 2)).to_vector());

  const Tensor e = expand(Tensor::from_vector({1, 2, 3}, {3}), {4, 3});
  CHECK(e.strides() == Strides{0, 1});
  CHECK(e.to_vector() == std::vector<float>{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3});

  // reshape is free on contiguous data and packs a strided view first.
  CHECK(reshape(x, {6, 2}).same_storage(x));
  const Tensor r = reshape(p, {4, 3});
  CHECK_FALSE(r.same_storage(x));
  CHECK(r.to_vector() == p.to_vector());
  // Writing through a view writes the base.
  Tensor base = Tensor::zeros({2, 3});
  Tensor col = slice(base, 1, 1, 2);
  col.copy_(Tensor::from_vector({7, 8}, {2, 1}));
  CHECK(base.to_vector() == std::vector<float>{0, 7, 0, 0, 8, 0});
}

TEST_CASE("views: every op reads strided inputs correctly", "[tensor][views]") {
  const Tensor a = randn({3, 4, 5}, 2), b = randn({5, 4, 3}, 3);
  const Tensor at = permute(b, {2, 1, 0});  // (3, 4, 5), strided
  const Tensor atc = at.contiguous();
  CHECK(max_abs_diff(add(a, at), add(a, atc)) == 0);
  CHECK(max_abs_diff(mul(at, at), mul(atc, atc)) == 0);
  CHECK(max_abs_diff(exp(at), exp(atc)) == 0);
  CHECK(max_abs_diff(gelu(at), gelu(atc)) == 0);
  CHECK(max_abs_diff(sum(at, {1}), sum(atc, {1})) == 0);
  CHECK(max_abs_diff(max(at, 2), max(atc, 2)) == 0);
  CHECK(max_abs_diff(softmax(at, 1), softmax(atc, 1)) == 0);
  CHECK(max_abs_diff(layer_norm(at, Tensor(), Tensor()), layer_norm(atc, Tensor(), Tensor())) == 0);
  CHECK(max_abs_diff(concat({at, a}, 0), concat({atc, a}, 0)) == 0);
  CHECK(max_abs_diff(index_select(at, 1, {3, 0}), index_select(atc, 1, {3, 0})) == 0);
  CHECK(max_abs_diff(cross_entropy(reshape(at, {12, 5}), std::vector<int64_t>(12, 1)),
                     cross_entropy(reshape(atc, {12, 5}), std::vector<int64_t>(12, 1))) == 0);
  // matmul reads transposed and head-split views through their strides.
  const Tensor m = randn({5, 6}, 4);
  CHECK(max_abs_diff(matmul(at, m, false, false), matmul(atc, m, false, false)) < 1e-5);
  CHECK(max_abs_diff(matmul(transpose(m, 0, 1), at, false, true),
                     matmul(transpose(m, 0, 1).contiguous(), atc, false, true)) < 1e-5);
}

TEST_CASE("views: attention's head split feeds batched GEMMs without copies", "[tensor][views]") {
  const long B = 2, T = 5, nh = 3, hd = 4;
  const Tensor x = randn({size_t(B), size_t(T), size_t(nh * hd)}, 5), y = randn({size_t(B), size_t(T), size_t(nh * hd)}, 6);
  auto split = [&](const Tensor& t) { return permute(reshape(t, {B, T, nh, hd}), {0, 2, 1, 3}); };
  const Tensor q = split(x), k = split(y);
  CHECK(q.same_storage(x));
  const Tensor scores = matmul(q, k, false, true);
  const Tensor ref = matmul(q.contiguous(), k.contiguous(), false, true);
  CHECK(max_abs_diff(scores, ref) < 1e-5);
  // Against a triple loop.
  const auto xv = x.to_vector(), yv = y.to_vector(), sv = scores.to_vector();
  for (long b = 0; b < B; ++b)
    for (long h = 0; h < nh; ++h)
      for (long i = 0; i < T; ++i)
        for (long j = 0; j < T; ++j) {
          double s = 0;
          for (long d = 0; d < hd; ++d) s += double(xv[size_t((b * T + i) * nh * hd + h * hd + d)]) * yv[size_t((b * T + j) * nh * hd + h * hd + d)];
          REQUIRE(sv[size_t(((b * nh + h) * T + i) * T + j)] == Approx(s).margin(1e-5));
        }
}

TEST_CASE("grad: every view op, alone and feeding other ops", "[grad][views]") {
  const Tensor x = randn({3, 4, 5}, 7), w = randn({5, 3}, 8), v = randn({4}, 9);
  check_gradients([](const V& t) { return permute(t[0], {1, 2, 0}); }, {x});
  check_gradients([](const V& t) { return mul(transpose(t[0], 0, 2), transpose(t[0], 0, 2)); }, {x});
  check_gradients([](const V& t) { return slice(slice(t[0], 2, 1, 4), 0, 1, 3); }, {x});
  check_gradients([](const V& t) { return mul(expand(t[1], {3, 5, 4}), permute(t[0], {0, 2, 1})); }, {x, v});
  check_gradients([](const V& t) { return reshape(permute(t[0], {2, 0, 1}), {5, 12}); }, {x});
  check_gradients([](const V& t) { return contiguous(permute(t[0], {2, 1, 0})); }, {x});
  check_gradients([](const V& t) { return matmul(permute(t[0], {1, 0, 2}), t[1]); }, {x, w});
  check_gradients([](const V& t) { return matmul(t[1], transpose(slice(t[0], 1, 0, 3), 1, 2), true, false); }, {x, w});
  check_gradients([](const V& t) { return softmax(transpose(t[0], 1, 2), -1); }, {x});
  check_gradients([](const V& t) { return layer_norm(slice(permute(t[0], {0, 2, 1}), 1, 1, 4), Tensor(), Tensor()); }, {x});
  check_gradients([](const V& t) { return sum(permute(t[0], {2, 0, 1}), {0, 2}); }, {x});
  // Attention-style: split heads, scores, probabilities, context, merge heads.
  const Tensor q = randn({2, 3, 6}, 10), k = randn({2, 3, 6}, 11);
  check_gradients(
      [](const V& t) {
        auto split = [](const Tensor& a) { return permute(reshape(a, {2, 3, 2, 3}), {0, 2, 1, 3}); };
        const Tensor p = softmax(matmul(split(t[0]), split(t[1]), false, true), -1);
        return reshape(permute(matmul(p, split(t[1])), {0, 2, 1, 3}), {2, 3, 6});
      },
      {q, k});
}

TEST_CASE("int64 tensors carry ids and labels", "[tensor][dtype]") {
  const Tensor ids = Tensor::from_ints({1, 3, 3, 0, 2, 1}, {2, 3});
  CHECK(ids.dtype() == Dtype::Int64);
  CHECK(ids.to_ints() == std::vector<int64_t>{1, 3, 3, 0, 2, 1});
  const Tensor w = randn({4, 5}, 12);
  CHECK(max_abs_diff(embedding(w, ids), embedding(w, ids.to_ints(), {2, 3})) == 0);
  const Tensor logits = randn({6, 4}, 13);
  CHECK(cross_entropy(logits, ids.reshape({6})).item() == cross_entropy(logits, ids.to_ints()).item());
  CHECK_THROWS_WITH(embedding(w, Tensor::zeros({2})), Contains("[embedding] ids must be int64, got float32"));
  CHECK_THROWS_WITH(Tensor::from_ints({1, 2}, {3}), Contains("[from_ints] 2 values do not fill shape [3]"));
}

TEST_CASE("engine: grad hooks fire once per backward with the final gradient", "[engine][hooks]") {
  Tensor a = randn({4}, 14), b = randn({4}, 15);
  std::vector<std::string> fired;
  std::vector<float> a_seen;
  a.register_grad_hook([&](const Tensor& g) {
    fired.push_back("a");
    a_seen = g.to_vector();
  });
  b.register_grad_hook([&](const Tensor&) { fired.push_back("b"); });
  // a is used three times (once early, twice late); its hook must see the sum of all three.
  Tensor loss = sum(mul(add(mul(a, b), a), a));
  loss.backward();
  REQUIRE(fired.size() == 2);
  const auto av = a.to_vector(), bv = b.to_vector(), ga = a.grad().to_vector();
  for (size_t i = 0; i < 4; ++i) CHECK(ga[i] == Approx(2 * av[i] * bv[i] + 2 * av[i]).epsilon(1e-5));
  CHECK(a_seen == ga);
  // A second backward fires again and sees the accumulated gradient.
  sum(a).backward();
  CHECK(fired.size() == 3);
  CHECK(a_seen[0] == Approx(ga[0] + 1.f));
}

TEST_CASE("engine: a hook fires once even where an edge into its leaf carries no gradient", "[engine][hooks]") {
  // The condition of where() gets no gradient: x itself, then a node computing it from x.
  Tensor x = Tensor::from_vector({1.f, -2.f, 3.f}, {3}).requires_grad_(true);
  int runs = 0;
  x.register_grad_hook([&](const Tensor&) { ++runs; });
  sum(where(x, x * 2.f, Tensor::zeros({3}))).backward();
  CHECK(runs == 1);
  sum(where(x * 1.f, x, Tensor::zeros({3}))).backward();
  CHECK(runs == 2);
  sum(add(masked_fill(x, relu(x), 0.f), x)).backward();
  CHECK(runs == 3);
}

TEST_CASE("engine: backward(g) on a leaf copies g", "[engine]") {
  Tensor x = Tensor::zeros({3}).requires_grad_(true);
  const Tensor g = Tensor::from_vector({1.f, 2.f, 3.f}, {3});
  x.backward(g);
  x.backward(g);
  CHECK(g.to_vector() == std::vector<float>{1.f, 2.f, 3.f});
  CHECK(x.grad().to_vector() == std::vector<float>{2.f, 4.f, 6.f});
}

TEST_CASE("engine: a hook fires before backward reaches earlier layers", "[engine][hooks]") {
  // last is used only at the end of the forward, so its gradient is final first.
  Tensor first = randn({3}, 16), last = randn({3}, 17);
  std::vector<std::string> order;
  first.register_grad_hook([&](const Tensor&) { order.push_back("first"); });
  last.register_grad_hook([&](const Tensor&) { order.push_back("last"); });
  Tensor h = tanh(mul(first, Tensor::full({3}, 2.f)));
  for (int i = 0; i < 5; ++i) h = tanh(h);
  sum(mul(h, last)).backward();
  CHECK(order == std::vector<std::string>{"last", "first"});
}

TEST_CASE("engine: EnableGradGuard records inside NoGradGuard", "[engine]") {
  Tensor x = randn({2}, 18);
  NoGradGuard off;
  CHECK_FALSE(mul(x, x).requires_grad());
  {
    EnableGradGuard on;
    CHECK(mul(x, x).requires_grad());
  }
  CHECK_FALSE(grad_enabled());
}

TEST_CASE("checkpoint: recomputation gives the same values and gradients, dropout included", "[engine][checkpoint]") {
  // Under bf16 too: the first forward runs without gradients, where a 2-D matmul would take bf16,
  // but must compute what the recompute (with gradients, fp32) computes.
  for (MatmulPrecision precision : {MatmulPrecision::FP32, MatmulPrecision::BF16}) {
    INFO(matmul_precision_name(precision));
    MatmulPrecisionGuard guard(precision);
    Tensor x = randn({4, 6}, 19), w1 = randn({6, 6}, 20, 0.5f), w2 = randn({6, 6}, 21, 0.5f);
    auto block = [&](const std::vector<Tensor>& in) {
      Tensor h = dropout(gelu(matmul(in[0], w1)), 0.3f, true);
      return layer_norm(add(matmul(h, w2), in[0]), Tensor(), Tensor());
    };
    manual_seed(99);
    Tensor plain = block({x});
    sum(mul(plain, plain)).backward();
    const Tensor gx = x.grad().clone(), g1 = w1.grad().clone(), g2 = w2.grad().clone();
    x.zero_grad();
    w1.zero_grad();
    w2.zero_grad();

    int hooks = 0;
    w1.register_grad_hook([&](const Tensor&) { ++hooks; });
    manual_seed(99);
    Tensor ck = checkpoint(block, {x});
    CHECK(ck.grad_fn()->name == "checkpoint");
    CHECK(max_abs_diff(ck, plain) == 0);
    sum(mul(ck, ck)).backward();
    CHECK(max_abs_diff(x.grad(), gx) == 0);
    CHECK(max_abs_diff(w1.grad(), g1) == 0);
    CHECK(max_abs_diff(w2.grad(), g2) == 0);
    CHECK(hooks == 1);
  }
}
