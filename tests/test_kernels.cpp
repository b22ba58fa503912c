// Every SIMD kernel against its scalar twin on sizes that are not multiples of the vector width.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "autograd/kernels/random_lanes.hpp"
#include "autograd/kernels/vec.hpp"
#include "tests/random_values.hpp"
#include "util/random.hpp"

using namespace xg;

namespace {
const std::vector<size_t> kSizes = {1, 7, 17, 1000, 4099};

void check_close(const std::vector<float>& simd, const std::vector<float>& ref, double rtol,
                 double atol, const std::string& what) {
  REQUIRE(simd.size() == ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    INFO(what << " n=" << ref.size() << " i=" << i << " simd=" << simd[i] << " scalar=" << ref[i]);
    REQUIRE(std::fabs(double(simd[i]) - ref[i]) <= atol + rtol * std::fabs(double(ref[i])));
  }
}
}  // namespace

TEST_CASE("simd binary kernels match scalar, all stride patterns", "[kernels]") {
  for (size_t n : kSizes) {
    const auto a = random_vec(n, 1, -3.f, 3.f), b = random_vec(n, 2, 0.5f, 2.f);
    for (auto op : {vec::Binary::Add, vec::Binary::Sub, vec::Binary::Mul, vec::Binary::Div})
      for (auto [sa, sb] : {std::pair<size_t, size_t>{1, 1}, {1, 0}, {0, 1}, {0, 0}}) {
        std::vector<float> o1(n), o2(n);
        vec::binary(op, a.data(), sa, b.data(), sb, o1.data(), n);
        vec::scalar::binary(op, a.data(), sa, b.data(), sb, o2.data(), n);
        check_close(o1, o2, 1e-6, 0, "binary op " + std::to_string(int(op)));
      }
    std::vector<float> y1 = b, y2 = b, s1(n), s2(n);
    vec::axpy(0.7f, a.data(), y1.data(), n);
    vec::scalar::axpy(0.7f, a.data(), y2.data(), n);
    check_close(y1, y2, 1e-6, 1e-7, "axpy");
    vec::scale(a.data(), -1.3f, s1.data(), n);
    vec::scalar::scale(a.data(), -1.3f, s2.data(), n);
    check_close(s1, s2, 1e-6, 0, "scale");
  }
}

TEST_CASE("simd dropout_apply matches scalar at every threshold, and fill_u32 is next_u64's halves", "[kernels]") {
  for (size_t n : kSizes) {
    const auto x = random_vec(n, 3, -3.f, 3.f);
    std::vector<uint32_t> bits(n);
    Generator g(5);
    for (auto& b : bits) b = uint32_t(g.next_u64() >> 17);
    bits[0] = 0xffffffffu;  // the extremes, against each threshold
    if (n > 1) bits[1] = 0;
    if (n > 2) bits[2] = 0x80000000u;
    if (n > 5) bits[3] = 1, bits[4] = 0x7fffffffu, bits[5] = 0x80000001u;  // equal to a threshold
    for (uint32_t threshold : {0u, 1u, 0x7fffffffu, 0x80000000u, 0x80000001u, 0xffffffffu}) {
      std::vector<float> o1(n), o2(n);
      vec::dropout_apply(bits.data(), threshold, x.data(), 1.25f, o1.data(), n);
      vec::scalar::dropout_apply(bits.data(), threshold, x.data(), 1.25f, o2.data(), n);
      for (size_t i = 0; i < n; ++i) {
        INFO("n=" << n << " threshold=" << threshold << " i=" << i);
        REQUIRE(o1[i] == o2[i]);
        REQUIRE(o1[i] == (bits[i] >= threshold ? x[i] * 1.25f : 0.f));
      }
    }
    Generator a(9), b(9);
    std::vector<uint32_t> words(n);
    a.fill_u32(words.data(), n);
    for (size_t i = 0; i < n; i += 2) {
      const uint64_t r = b.next_u64();
      REQUIRE(words[i] == uint32_t(r));
      if (i + 1 < n) REQUIRE(words[i + 1] == uint32_t(r >> 32));
    }
    REQUIRE(a.next_u64() == b.next_u64());  // both left at the same place
  }
}

TEST_CASE("fill_u32_side_by_side draws each generator's own fill_u32 numbers", "[kernels]") {
  // Counts below, at and past the lane count (4 with AVX2, 8 with AVX-512), odd and even lengths.
  for (size_t count : {size_t(1), size_t(3), size_t(4), size_t(5), size_t(8), size_t(9), size_t(17)}) {
    for (size_t n : {size_t(1), size_t(2), size_t(7), size_t(1024)}) {
      std::vector<Generator> lanes, serial;
      std::vector<std::vector<uint32_t>> got(count, std::vector<uint32_t>(n + 1, 0xdeadbeef)), want = got;
      std::vector<uint32_t*> rows;
      for (size_t k = 0; k < count; ++k) {
        lanes.emplace_back(100 + k);
        serial.emplace_back(100 + k);
        lanes[k].normal();  // a cached Box-Muller value must survive
        serial[k].normal();
        rows.push_back(got[k].data());
      }
      fill_u32_side_by_side(lanes.data(), rows.data(), count, n);
      for (size_t k = 0; k < count; ++k) {
        serial[k].fill_u32(want[k].data(), n);
        INFO("count " << count << " n " << n << " generator " << k);
        REQUIRE(got[k] == want[k]);  // the word past n is untouched too
        REQUIRE(lanes[k].normal() == serial[k].normal());
        REQUIRE(lanes[k].next_u64() == serial[k].next_u64());
      }
    }
  }
}

TEST_CASE("simd unary kernels and their backward match scalar", "[kernels]") {
  using U = vec::Unary;
  for (size_t n : kSizes) {
    const auto x = random_vec(n, 3, -6.f, 6.f), pos = random_vec(n, 4, 0.01f, 50.f),
               g = random_vec(n, 5, -3.f, 3.f);
    for (U op : {U::Neg, U::Exp, U::Log, U::Sqrt, U::Tanh, U::Sigmoid, U::Relu, U::Gelu, U::GeluTanh}) {
      const auto& in = (op == U::Log || op == U::Sqrt) ? pos : x;
      std::vector<float> o1(n), o2(n);
      vec::unary(op, in.data(), o1.data(), n);
      vec::scalar::unary(op, in.data(), o2.data(), n);
      check_close(o1, o2, 4e-6, 1e-6, "unary op " + std::to_string(int(op)));
    }
    for (U op : {U::Tanh, U::Sigmoid, U::Relu, U::Gelu, U::GeluTanh}) {
      std::vector<float> d1(n), d2(n);
      vec::unary_backward(op, x.data(), g.data(), d1.data(), n);
      vec::scalar::unary_backward(op, x.data(), g.data(), d2.data(), n);
      check_close(d1, d2, 4e-6, 1e-6, "unary backward op " + std::to_string(int(op)));
    }
    for (float p : {2.f, 0.5f, -1.5f, 3.f}) {
      std::vector<float> o1(n), o2(n);
      vec::pow_scalar(pos.data(), p, o1.data(), n);
      vec::scalar::pow_scalar(pos.data(), p, o2.data(), n);
      check_close(o1, o2, 4e-6, 1e-7, "pow " + std::to_string(p));
    }
  }
  SECTION("pow at bases outside (0, inf) gives std::pow's value in every lane") {
    // xsimd's exp(p log x) gives 0 for 0^p and NaN for a negative base.
    std::vector<float> x(37);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 5) - 2);  // -2 -1 0 1 2
    x[7] = INFINITY;
    x[8] = -0.f;
    for (float p : {0.f, 1.f, 3.f, -1.f, 0.5f, 2.5f}) {
      std::vector<float> out(x.size());
      vec::pow_scalar(x.data(), p, out.data(), x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        INFO("pow(" << x[i] << ", " << p << ") at " << i);
        const float want = std::pow(x[i], p);
        if (std::isnan(want)) CHECK(std::isnan(out[i]));
        else CHECK(out[i] == want);
      }
    }
  }
}

// The SIMD erf GELU is a fitted erfc (vec_ops.hpp), the scalar twin std::erfc: here both SIMD
// kernels against the exact function in double, on a grid over [-12, 12] (0 beyond, x above).
// Sorted, most batches are all small or all large; shuffled, nearly every one mixes them.
TEST_CASE("simd erf GELU and its gradient are within a few 1e-7 of the exact function", "[kernels]") {
  std::vector<float> x;
  for (int i = -120000; i < 120000; ++i) x.push_back(float(i) * 1e-4f + 3e-5f);
  const bool shuffled = GENERATE(false, true);
  if (shuffled) std::shuffle(x.begin(), x.end(), std::mt19937(7));
  const size_t n = x.size();
  std::vector<float> y(n), dx(n);
  const std::vector<float> ones(n, 1.f);
  vec::unary(vec::Unary::Gelu, x.data(), y.data(), n);
  vec::unary_backward(vec::Unary::Gelu, x.data(), ones.data(), dx.data(), n);
  double worst_abs = 0, worst_rel = 0, worst_grad = 0;
  for (size_t i = 0; i < n; ++i) {
    const double v = x[i], cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
    const double gelu = v * cdf, grad = cdf + v * std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI);
    worst_abs = std::max(worst_abs, std::fabs(y[i] - gelu));
    if (std::fabs(gelu) > 1e-6) worst_rel = std::max(worst_rel, std::fabs(y[i] - gelu) / std::fabs(gelu));
    worst_grad = std::max(worst_grad, std::fabs(dx[i] - grad));
  }
  INFO((shuffled ? "shuffled" : "sorted") << " max |error|: GELU " << worst_abs << ", relative where |GELU| > 1e-6 " << worst_rel << ", gradient " << worst_grad);
  CHECK(worst_abs < 4.5e-7);   // ~1 ulp of 4
  CHECK(worst_rel < 2e-3);     // at x ~ -5 (1 + erf(z) there lost 6.7%)
  CHECK(worst_grad < 4.5e-7);
}

TEST_CASE("simd sum and max match scalar", "[kernels]") {
  for (size_t n : kSizes) {
    const auto x = random_vec(n, 6, -3.f, 3.f);
    double abs_sum = 0;
    for (float v : x) abs_sum += std::fabs(v);
    CHECK(std::fabs(vec::sum(x.data(), n) - vec::scalar::sum(x.data(), n)) <= 1e-6 * abs_sum + 1e-6);
    CHECK(vec::max(x.data(), n) == vec::scalar::max(x.data(), n));
  }
}

TEST_CASE("simd softmax / log_softmax forward and backward match scalar", "[kernels]") {
  for (size_t cols : kSizes) {
    const size_t rows = 3;
    const auto x = random_vec(rows * cols, 7, -8.f, 8.f), g = random_vec(rows * cols, 8, -3.f, 3.f);
    std::vector<float> y1(rows * cols), y2(rows * cols), d1(rows * cols), d2(rows * cols);
    vec::softmax(x.data(), y1.data(), rows, cols);
    vec::scalar::softmax(x.data(), y2.data(), rows, cols);
    check_close(y1, y2, 1e-5, 1e-8, "softmax");
    vec::softmax_backward(y2.data(), g.data(), d1.data(), rows, cols);
    vec::scalar::softmax_backward(y2.data(), g.data(), d2.data(), rows, cols);
    check_close(d1, d2, 1e-4, 1e-7, "softmax_backward");
    vec::log_softmax(x.data(), y1.data(), rows, cols);
    vec::scalar::log_softmax(x.data(), y2.data(), rows, cols);
    check_close(y1, y2, 1e-5, 1e-5, "log_softmax");
    vec::log_softmax_backward(y2.data(), g.data(), d1.data(), rows, cols);
    vec::scalar::log_softmax_backward(y2.data(), g.data(), d2.data(), rows, cols);
    check_close(d1, d2, 1e-4, 1e-5, "log_softmax_backward");
  }
}

TEST_CASE("simd sum_shifted matches the scalar double sum, and a row of an MLM head's width", "[kernels]") {
  // Label smoothing's mean log p: sum(x - lse). All terms share a sign, so the float lanes of 32
  // vectors are within ~32 ulp relative of the double sum; 2e-6 allows that with margin.
  std::vector<size_t> sizes(kSizes.begin(), kSizes.end());
  sizes.push_back(30522);  // BERT's vocabulary, many flushes plus a tail
  for (size_t n : sizes) {
    const auto x = random_vec(n, 13, -30.f, 12.f);
    const float shift = vec::log_sum_exp(x.data(), n);
    const double simd = vec::sum_shifted(x.data(), shift, n), ref = vec::scalar::sum_shifted(x.data(), shift, n);
    INFO("n " << n);
    CHECK(simd == Approx(ref).epsilon(2e-6));
    if (n > 1) CHECK(simd < 0.0);  // x - lse < 0 for every x: a shift lost somewhere would show
  }
  CHECK(vec::sum_shifted(nullptr, 1.f, 0) == 0.0);
}

TEST_CASE("simd log_sum_exp and cross_entropy_grad match scalar and the log-softmax route", "[kernels]") {
  for (size_t cols : kSizes) {
    const auto x = random_vec(cols, 9, -8.f, 8.f);
    const float lse = vec::log_sum_exp(x.data(), cols);
    CHECK(lse == Approx(vec::scalar::log_sum_exp(x.data(), cols)).epsilon(1e-6));
    std::vector<float> logp(cols);
    vec::log_softmax(x.data(), logp.data(), 1, cols);
    CHECK(logp[0] == x[0] - lse);  // log_softmax is x - log_sum_exp, bit for bit
    // Every target position: first, inside a SIMD batch, the last of a batch, the scalar tail.
    for (size_t target : {size_t(0), cols / 2, std::min(cols - 1, size_t(7)), cols - 1}) {
      for (float smooth : {0.f, 0.1f / float(cols)}) {
        const float target_sub = 1.f - 0.1f * (smooth > 0.f), g = -0.37f;
        std::vector<float> d1(cols), d2(cols), route(cols);
        vec::cross_entropy_grad(x.data(), lse, smooth, target, target_sub, g, d1.data(), cols);
        vec::scalar::cross_entropy_grad(x.data(), lse, smooth, target, target_sub, g, d2.data(), cols);
        check_close(d1, d2, 1e-5, 1e-7, "cross_entropy_grad");
        // The route the loss took before: exp of the log-probabilities, minus, then scaled.
        vec::unary(vec::Unary::Exp, logp.data(), route.data(), cols);
        for (auto& v : route) v -= smooth;
        route[target] -= target_sub;
        vec::scale(route.data(), g, route.data(), cols);
        INFO("cols " << cols << " target " << target << " smooth " << smooth);
        CHECK(d1 == route);
      }
    }
  }
}

TEST_CASE("simd layer_norm forward and backward match scalar", "[kernels]") {
  for (size_t cols : kSizes) {
    const size_t rows = 3;
    const auto x = random_vec(rows * cols, 9, -4.f, 6.f), g = random_vec(rows * cols, 10, -3.f, 3.f),
               w = random_vec(cols, 11, -3.f, 3.f), b = random_vec(cols, 12, -3.f, 3.f);
    for (bool affine : {true, false}) {
      const float* pw = affine ? w.data() : nullptr;
      const float* pb = affine ? b.data() : nullptr;
      std::vector<float> y1(rows * cols), y2(rows * cols), m1(rows), m2(rows), r1(rows), r2(rows);
      vec::layer_norm(x.data(), pw, pb, y1.data(), m1.data(), r1.data(), rows, cols, 1e-5f);
      vec::scalar::layer_norm(x.data(), pw, pb, y2.data(), m2.data(), r2.data(), rows, cols, 1e-5f);
      check_close(y1, y2, 1e-4, 1e-4, "layer_norm");
      check_close(m1, m2, 1e-5, 1e-6, "layer_norm mean");
      check_close(r1, r2, 1e-4, 1e-6, "layer_norm rstd");
      std::vector<float> dx1(rows * cols), dx2(rows * cols), dw1(cols, 0.f), dw2(cols, 0.f),
          db1(cols, 0.f), db2(cols, 0.f);
      vec::layer_norm_backward(x.data(), pw, m2.data(), r2.data(), g.data(), dx1.data(),
                               dw1.data(), db1.data(), rows, cols);
      vec::scalar::layer_norm_backward(x.data(), pw, m2.data(), r2.data(), g.data(), dx2.data(),
                                       dw2.data(), db2.data(), rows, cols);
      check_close(dx1, dx2, 1e-3, 1e-4, "layer_norm_backward dx");
      check_close(dw1, dw2, 1e-4, 1e-5, "layer_norm_backward dw");
      check_close(db1, db2, 1e-5, 1e-5, "layer_norm_backward db");
    }
  }
}

TEST_CASE("simd adam step matches scalar, and does not depend on where a range is split", "[kernels]") {
  // Adam (l2 > 0, keep 1) and AdamW (l2 0, keep < 1), at step 3 of betas (0.9, 0.999).
  for (const vec::AdamStep c : {vec::AdamStep{0.9f, 0.999f, 1e-8f, 1e-3f / 0.271f, 1.f / std::sqrt(0.002997f), 0.01f, 1.f},
                                vec::AdamStep{0.9f, 0.98f, 1e-6f, 5e-4f, 2.f, 0.f, 1.f - 5e-6f}})
    for (size_t n : kSizes) {
      const auto w0 = random_vec(n, 21, -1.f, 1.f), g = random_vec(n, 22, -0.1f, 0.1f), m0 = random_vec(n, 23, -0.01f, 0.01f),
                 v0 = random_vec(n, 24, 0.f, 1e-4f);
      auto w1 = w0, m1 = m0, v1 = v0, w2 = w0, m2 = m0, v2 = v0;
      vec::adam(c, w1.data(), g.data(), m1.data(), v1.data(), n);
      vec::scalar::adam(c, w2.data(), g.data(), m2.data(), v2.data(), n);
      // within a rounding of the inputs' scale: m = 0.9 m + 0.1 g cancels, and where the CPU has
      // no FMA, xsimd's batch fma rounds the product b1 m once more than std::fma does
      check_close(w1, w2, 1e-6, 1e-7, "adam w");
      check_close(m1, m2, 1e-6, 2e-9, "adam m");
      check_close(v1, v2, 1e-6, 2e-11, "adam v");
      CHECK(w1 != w0);
      // The same step in two calls split at an odd place (as the optimizer's thread chunks are):
      // the same bits
      auto w3 = w0, m3 = m0, v3 = v0;
      const size_t cut = n / 3;
      vec::adam(c, w3.data(), g.data(), m3.data(), v3.data(), cut);
      vec::adam(c, w3.data() + cut, g.data() + cut, m3.data() + cut, v3.data() + cut, n - cut);
      CHECK(w3 == w1);
      CHECK(m3 == m1);
      CHECK(v3 == v1);
    }
}

TEST_CASE("simd lamb direction and its sums match scalar", "[kernels]") {
  // step 3 of betas (0.9, 0.999) with bias correction and decay, and step 1 without either
  for (const vec::LambStep c : {vec::LambStep{0.9f, 0.999f, 1e-6f, 1.f / 0.271f, 1.f / std::sqrt(0.002997f), 0.01f},
                                vec::LambStep{0.9f, 0.98f, 1e-6f, 1.f, 1.f, 0.f}})
    for (size_t n : kSizes) {
      const auto w = random_vec(n, 31, -1.f, 1.f), g = random_vec(n, 32, -0.1f, 0.1f), m0 = random_vec(n, 33, -0.01f, 0.01f),
                 v0 = random_vec(n, 34, 0.f, 1e-4f);
      auto m1 = m0, v1 = v0, m2 = m0, v2 = v0;
      std::vector<float> r1(n), r2(n);
      double s1[2] = {0.5, 0.25}, s2[2] = {0.5, 0.25};  // added to, not overwritten
      vec::lamb_direction(c, w.data(), g.data(), m1.data(), v1.data(), r1.data(), n, s1);
      vec::scalar::lamb_direction(c, w.data(), g.data(), m2.data(), v2.data(), r2.data(), n, s2);
      check_close(m1, m2, 1e-6, 2e-9, "lamb m");
      check_close(v1, v2, 1e-6, 2e-11, "lamb v");
      check_close(r1, r2, 1e-5, 1e-6, "lamb r");
      CHECK(s1[0] == Approx(s2[0]).epsilon(1e-6));
      CHECK(s1[1] == Approx(s2[1]).epsilon(1e-5));
      double w_sq = 0.5, r_sq = 0.25;  // the SIMD sums against double sums of its own outputs
      for (size_t i = 0; i < n; ++i) w_sq += double(w[i]) * w[i], r_sq += double(r1[i]) * r1[i];
      CHECK(s1[0] == Approx(w_sq).epsilon(1e-6));
      CHECK(s1[1] == Approx(r_sq).epsilon(1e-6));
    }
}
