#pragma once
// Functors shared by the SIMD kernels and their scalar twins: the float overload is the plain
// <cmath> formula (the twin), the batch overload the xsimd one.
#include <algorithm>
#include <cmath>

#include "autograd/kernels/vec.hpp"
#include "autograd/xt.hpp"

namespace xg::vec::detail {

constexpr float kSqrtHalf = 0.7071067811865476f;      // 1/sqrt(2)
constexpr float kInvSqrt2Pi = 0.3989422804014327f;    // 1/sqrt(2*pi)
constexpr float kSqrt2OverPi = 0.7978845608028654f;   // sqrt(2/pi)
constexpr float kGeluCubic = 0.044715f;

struct Add { template <class T> T operator()(const T& a, const T& b) const { return a + b; } };
struct Sub { template <class T> T operator()(const T& a, const T& b) const { return a - b; } };
struct Mul { template <class T> T operator()(const T& a, const T& b) const { return a * b; } };
struct Div { template <class T> T operator()(const T& a, const T& b) const { return a / b; } };

struct Neg {
  float operator()(float x) const { return -x; }
  fbatch operator()(const fbatch& x) const { return -x; }
};
struct Exp {
  float operator()(float x) const { return std::exp(x); }
  fbatch operator()(const fbatch& x) const { return xsimd::exp(x); }
};
struct Log {
  float operator()(float x) const { return std::log(x); }
  fbatch operator()(const fbatch& x) const { return xsimd::log(x); }
};
struct Sqrt {
  float operator()(float x) const { return std::sqrt(x); }
  fbatch operator()(const fbatch& x) const { return xsimd::sqrt(x); }
};
struct Tanh {
  float operator()(float x) const { return std::tanh(x); }
  fbatch operator()(const fbatch& x) const { return xsimd::tanh(x); }
};
struct Sigmoid {
  float operator()(float x) const { return 1.f / (1.f + std::exp(-x)); }
  fbatch operator()(const fbatch& x) const { return fbatch(1.f) / (fbatch(1.f) + xsimd::exp(-x)); }
};
struct Relu {
  float operator()(float x) const { return x > 0.f ? x : 0.f; }
  fbatch operator()(const fbatch& x) const { return xsimd::max(x, fbatch(0.f)); }
};
// Phi(x), the standard normal CDF, and phi(x), its density, on a batch, with z = x / sqrt 2:
// - every lane |z| < 2/3 (97% of 8-lane batches at std 0.3, a freshly initialised mini model's
//   pre-activations; few of a trained model's): erf(z) as z Q(z^2), Q a degree-4 Chebyshev fit
//   of erf(z)/z there (relative error 1.3e-7 in fp32), and Phi = (1 + erf(z)) / 2;
// - else erfc(|z|) as t P(t) exp(-z^2), t = 1 / (1 + p |z|) (Abramowitz and Stegun 7.1.26,
//   |error| <= 1.5e-7; PyTorch's and oneDNN's CPU GELU kernels use the same fit), and
//   Phi(x) = erfc(-z) / 2 straight from it for x < 0, without the cancellation of 1 + erf(z).
// xsimd::erf runs two branches, exp included, whenever a batch mixes |z| below and above 2/3; this
// costs one exp (shared with phi) and one division: the erf GELU on O(1) inputs in ~0.6x the time,
// and the largest relative error where |GELU(x)| > 1e-6 (x > -5.1) 0.17%, not 6.7% (test_kernels.cpp;
// further out the fit's relative error grows, at |GELU| below 1e-6).
// The branch is per batch, so a value's bits depend on its batch-mates: callers keep batches at
// the same offsets (vec::unary from each row's start, the GEMM epilogue's row segments from
// multiples of NR), and the bits do not depend on thread counts.
// kPdf false leaves pdf 0 (the forward needs no density, and the small branch no exp then).
struct NormalCdfPdf {
  fbatch cdf, pdf;
};
template <bool kPdf>
NormalCdfPdf normal_cdf_pdf(const fbatch& x) {
  const fbatch z = x * fbatch(kSqrtHalf), a = xsimd::abs(z), u = z * z;
  if (xsimd::all(a < fbatch(2.f / 3.f))) {
    fbatch q = xsimd::fma(fbatch(0.004365373402833939f), u, fbatch(-0.02654365450143814f));
    q = xsimd::fma(q, u, fbatch(0.11278760433197021f));
    q = xsimd::fma(q, u, fbatch(-0.3761236369609833f));
    q = xsimd::fma(q, u, fbatch(1.1283791065216064f));
    const fbatch cdf = fbatch(0.5f) * xsimd::fma(z, q, fbatch(1.f));
    if constexpr (kPdf) return {cdf, fbatch(kInvSqrt2Pi) * xsimd::exp(-u)};
    else return {cdf, fbatch(0.f)};
  }
  const fbatch t = fbatch(1.f) / xsimd::fma(fbatch(0.3275911f), a, fbatch(1.f));
  fbatch p = xsimd::fma(fbatch(1.061405429f), t, fbatch(-1.453152027f));
  p = xsimd::fma(p, t, fbatch(1.421413741f));
  p = xsimd::fma(p, t, fbatch(-0.284496736f));
  p = xsimd::fma(p, t, fbatch(0.254829592f));
  const fbatch e = xsimd::exp(-u);  // exp(-x^2 / 2)
  const fbatch lower_tail = fbatch(0.5f) * p * t * e;  // Phi(-|x|)
  return {xsimd::select(x < fbatch(0.f), lower_tail, fbatch(1.f) - lower_tail),
          kPdf ? fbatch(kInvSqrt2Pi) * e : fbatch(0.f)};
}

// GELU(x) = x * Phi(x). The float overload (the scalar twin, and the tail of a SIMD loop) takes
// Phi(x) = erfc(-z) / 2 from std::erfc, with no cancellation for x < 0 either.
struct Gelu {
  float operator()(float x) const { return 0.5f * x * std::erfc(-x * kSqrtHalf); }
  fbatch operator()(const fbatch& x) const { return x * normal_cdf_pdf<false>(x).cdf; }
};
// The tanh approximation used by the original BERT code ("gelu_new").
struct GeluTanh {
  template <class T>
  static T inner(const T& x) {
    return T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
  }
  float operator()(float x) const { return 0.5f * x * (1.f + std::tanh(inner(x))); }
  fbatch operator()(const fbatch& x) const {
    return fbatch(0.5f) * x * (fbatch(1.f) + xsimd::tanh(inner(x)));
  }
};

// Backward functors: (x or y, g) -> dx. NoGrad: an op whose backward is other ops.
struct NoGrad {};
struct ReluGrad {
  float operator()(float x, float g) const { return x > 0.f ? g : 0.f; }
  fbatch operator()(const fbatch& x, const fbatch& g) const {
    return xsimd::select(x > fbatch(0.f), g, fbatch(0.f));
  }
};
struct TanhGrad {  // from y = tanh(x)
  template <class T>
  T operator()(const T& y, const T& g) const { return g * (T(1.f) - y * y); }
};
struct SigmoidGrad {  // from y = sigmoid(x)
  template <class T>
  T operator()(const T& y, const T& g) const { return g * y * (T(1.f) - y); }
};
struct GeluGrad {  // Phi(x) + x * phi(x)
  float operator()(float x, float g) const {
    const float cdf = 0.5f * std::erfc(-x * kSqrtHalf);
    const float pdf = kInvSqrt2Pi * std::exp(-0.5f * x * x);
    return g * (cdf + x * pdf);
  }
  fbatch operator()(const fbatch& x, const fbatch& g) const {
    const auto [cdf, pdf] = normal_cdf_pdf<true>(x);
    return g * (cdf + x * pdf);
  }
};
struct GeluTanhGrad {
  template <class T, class TanhF>
  static T eval(const T& x, const T& g, TanhF tanh_f) {
    const T t = tanh_f(GeluTanh::inner(x));
    const T dinner = T(kSqrt2OverPi) * (T(1.f) + T(3.f * kGeluCubic) * x * x);
    return g * (T(0.5f) * (T(1.f) + t) + T(0.5f) * x * (T(1.f) - t * t) * dinner);
  }
  float operator()(float x, float g) const {
    return eval(x, g, [](float v) { return std::tanh(v); });
  }
  fbatch operator()(const fbatch& x, const fbatch& g) const {
    return eval(x, g, [](const fbatch& v) { return xsimd::tanh(v); });
  }
};

// One Adam step of one weight (float) or one batch (fbatch): g += l2 w; m = b1 m + (1 - b1) g;
// v = b2 v + (1 - b2) g^2; w = keep w - step_size m / (sqrt(v) / sqrt(1 - b2^t) + eps).
template <class T>
void adam_update(const AdamStep& c, T& w, T g, T& m, T& v) {
  using std::fma;
  using std::sqrt;
  g = fma(T(c.l2), w, g);
  m = fma(T(c.beta1), m, T(1.f - c.beta1) * g);
  v = fma(T(c.beta2), v, T(1.f - c.beta2) * g * g);
  const T denominator = fma(sqrt(v), T(c.inv_sqrt_bc2), T(c.eps));
  w = fma(T(-c.step_size), m / denominator, w * T(c.keep));
}

// LAMB's moments of one weight or batch, and its direction (see LambStep).
template <class T>
T lamb_update(const LambStep& c, T w, T g, T& m, T& v) {
  using std::fma;
  using std::sqrt;
  m = fma(T(c.beta1), m, T(1.f - c.beta1) * g);
  v = fma(T(c.beta2), v, T(1.f - c.beta2) * g * g);
  return fma(T(c.weight_decay), w, m * T(c.inv_bc1) / fma(sqrt(v), T(c.inv_sqrt_bc2), T(c.eps)));
}

}  // namespace xg::vec::detail
