#include "tests/gradcheck.hpp"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <vector>

namespace xg::test {

Tensor randn(const Shape& shape, uint64_t seed, float scale) {
  Generator g(seed);
  return Tensor::normal(shape, 0.f, scale, g, /*requires_grad=*/true);
}

Tensor rand_away_from_zero(const Shape& shape, uint64_t seed, float gap, bool positive) {
  Generator g(seed);
  Tensor t = Tensor::empty(shape);
  for (size_t i = 0; i < t.numel(); ++i) {
    const float mag = gap + 1.5f * g.uniform();
    t.data()[i] = (positive || g.uniform() < 0.5f) ? mag : -mag;
  }
  t.requires_grad_(true);
  return t;
}

namespace {
// The elements to probe, ascending: all of them, or max_checks drawn without replacement (a fixed
// seed). An even stride reached one column only wherever it was a multiple of a row's width (24
// over (72, 8) probed column 0 alone); drawn at random, every dimension's positions come up.
std::vector<size_t> probe_indices(size_t n, size_t max_checks, uint64_t seed) {
  std::vector<size_t> all(n);
  for (size_t j = 0; j < n; ++j) all[j] = j;
  if (n <= max_checks) return all;
  Generator g(seed);
  for (size_t i = 0; i < max_checks; ++i) std::swap(all[i], all[i + g.below(n - i)]);
  all.resize(max_checks);
  std::sort(all.begin(), all.end());
  return all;
}

double weighted_sum(const Tensor& y_in, const Tensor& w) {
  const Tensor y = y_in.contiguous();  // f may return a strided view
  double s = 0;
  for (size_t i = 0; i < y.numel(); ++i) s += double(y.data()[i]) * double(w.data()[i]);
  return s;
}
}  // namespace

void check_gradients(const Fn& f, std::vector<Tensor> inputs, GradCheckOptions opt) {
  for (auto& t : inputs)
    if (t.defined() && t.requires_grad()) t.zero_grad();
  Tensor y = f(inputs);
  Generator wg(12345);
  const Tensor w = Tensor::uniform(y.shape(), -1.f, 1.f, wg);
  sum(mul(y, w)).backward();

  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    REQUIRE(x.grad().defined());
    const Tensor analytic = x.grad().contiguous();
    REQUIRE(analytic.shape() == x.shape());
    for (const size_t j : probe_indices(x.numel(), std::max<size_t>(1, opt.max_checks), 1000 + i)) {
      float* p = x.data() + j;
      const float orig = *p;
      *p = orig + opt.eps;
      const double plus = weighted_sum(f(inputs), w);
      *p = orig - opt.eps;
      const double minus = weighted_sum(f(inputs), w);
      *p = orig;
      const double numeric = (plus - minus) / (2.0 * double(opt.eps));
      const double a = analytic.data()[j];
      const double tol = opt.atol + opt.rtol * std::max(std::fabs(numeric), std::fabs(a));
      INFO("input " << i << " shape " << shape_str(x.shape()) << " element " << j
                    << ": analytic " << a << " numeric " << numeric);
      CHECK(std::fabs(numeric - a) <= tol);
    }
  }
}

}  // namespace xg::test
