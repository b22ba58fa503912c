// Plain scalar twins of the SIMD kernels in vec.cpp: the reference the tests compare against.
// Sums accumulate in double, so they are the more accurate of the two.
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "autograd/kernels/vec.hpp"
#include "autograd/kernels/vec_ops.hpp"

namespace xg::vec::scalar {
using namespace xg::vec::detail;

template <class F>
static void map_strided(const float* a, size_t sa, const float* b, size_t sb, float* out, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) out[i] = f(a[i * sa], b[i * sb]);
}

void binary(Binary op, const float* a, size_t sa, const float* b, size_t sb, float* out, size_t n) {
  switch (op) {
#define XG_BINARY(name) \
  case Binary::name: return map_strided(a, sa, b, sb, out, n, name{});
#include "autograd/kernels/binary_ops.def"
#undef XG_BINARY
  }
}

void add(const float* a, const float* b, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void axpy(float alpha, const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void scale(const float* x, float alpha, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = x[i] * alpha;
}

void dropout_apply(const uint32_t* bits, uint32_t threshold, const float* x, float scale, float* out,
                   size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = bits[i] >= threshold ? x[i] * scale : 0.f;
}

void adam(const AdamStep& c, float* w, const float* g, float* m, float* v, size_t n) {
  for (size_t i = 0; i < n; ++i) detail::adam_update(c, w[i], g[i], m[i], v[i]);
}

void lamb_direction(const LambStep& c, const float* w, const float* g, float* m, float* v, float* r, size_t n,
                    double sums[2]) {
  for (size_t i = 0; i < n; ++i) {
    r[i] = detail::lamb_update(c, w[i], g[i], m[i], v[i]);
    sums[0] += double(w[i]) * w[i];
    sums[1] += double(r[i]) * r[i];
  }
}

template <class F>
static void map1(const float* x, float* out, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) out[i] = f(x[i]);
}

void unary(Unary op, const float* x, float* out, size_t n) {
  switch (op) {
#define XG_UNARY(name, ...) \
  case Unary::name: return map1(x, out, n, name{});
#include "autograd/kernels/unary_ops.def"
#undef XG_UNARY
  }
}

void pow_scalar(const float* x, float p, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = std::pow(x[i], p);
}

template <class F>
static void map2(const float* x, const float* g, float* out, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) out[i] = f(x[i], g[i]);
}

template <class Grad>
static void map_grad(const float* x, const float* g, float* out, size_t n) {
  if constexpr (std::is_same_v<Grad, NoGrad>)
    throw std::logic_error("[unary_backward] op has no fused backward kernel");
  else
    map2(x, g, out, n, Grad{});
}

void unary_backward(Unary op, const float* xy, const float* g, float* dx, size_t n) {
  switch (op) {
#define XG_UNARY(name, grad, ...) \
  case Unary::name: return map_grad<grad>(xy, g, dx, n);
#include "autograd/kernels/unary_ops.def"
#undef XG_UNARY
  }
}

float sum(const float* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += x[i];
  return float(s);
}

double sum_shifted(const float* x, float shift, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(x[i] - shift);
  return s;
}

float max(const float* x, size_t n) {
  float m = -INFINITY;
  for (size_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

void softmax(const float* x, float* y, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const float m = max(xr, cols);
    double s = 0;
    for (size_t i = 0; i < cols; ++i) s += (yr[i] = std::exp(xr[i] - m));
    for (size_t i = 0; i < cols; ++i) yr[i] = float(yr[i] / s);
  }
}

void softmax_backward(const float* y, const float* g, float* dx, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float *yr = y + r * cols, *gr = g + r * cols;
    double d = 0;
    for (size_t i = 0; i < cols; ++i) d += double(yr[i]) * gr[i];
    for (size_t i = 0; i < cols; ++i) dx[r * cols + i] = float(yr[i] * (gr[i] - d));
  }
}

void log_softmax(const float* x, float* y, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float m = max(xr, cols);
    double s = 0;
    for (size_t i = 0; i < cols; ++i) s += std::exp(double(xr[i]) - m);
    const double lse = m + std::log(s);
    for (size_t i = 0; i < cols; ++i) y[r * cols + i] = float(xr[i] - lse);
  }
}

float log_sum_exp(const float* x, size_t n) {
  const float m = max(x, n);
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += std::exp(double(x[i]) - m);
  return float(m + std::log(s));
}

void cross_entropy_grad(const float* x, float lse, float smooth, size_t target, float target_sub,
                        float g, float* dx, size_t n) {
  for (size_t i = 0; i < n; ++i)
    dx[i] = float((std::exp(double(x[i]) - lse) - smooth - (i == target ? target_sub : 0.)) * g);
}

void log_softmax_backward(const float* y, const float* g, float* dx, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float *yr = y + r * cols, *gr = g + r * cols;
    double s = 0;
    for (size_t i = 0; i < cols; ++i) s += gr[i];
    for (size_t i = 0; i < cols; ++i) dx[r * cols + i] = float(gr[i] - std::exp(double(yr[i])) * s);
  }
}

void layer_norm(const float* x, const float* w, const float* b, float* y, float* mean,
                float* rstd, size_t rows, size_t cols, float eps) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double mu = 0, var = 0;
    for (size_t i = 0; i < cols; ++i) mu += xr[i];
    mu /= double(cols);
    for (size_t i = 0; i < cols; ++i) var += (xr[i] - mu) * (xr[i] - mu);
    var /= double(cols);
    const double rs = 1.0 / std::sqrt(var + eps);
    mean[r] = float(mu);
    rstd[r] = float(rs);
    for (size_t i = 0; i < cols; ++i) {
      double v = (xr[i] - mu) * rs;
      if (w) v *= w[i];
      if (b) v += b[i];
      y[r * cols + i] = float(v);
    }
  }
}

void layer_norm_backward(const float* x, const float* w, const float* mean, const float* rstd,
                         const float* g, float* dx, float* dw, float* db, size_t rows,
                         size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols, *gr = g + r * cols;
    double a = 0, c = 0;
    for (size_t i = 0; i < cols; ++i) {
      const double xh = (xr[i] - double(mean[r])) * rstd[r];
      const double gw = w ? double(gr[i]) * w[i] : gr[i];
      a += gw;
      c += gw * xh;
      if (dw) dw[i] += float(gr[i] * xh);
      if (db) db[i] += gr[i];
    }
    a /= double(cols);
    c /= double(cols);
    for (size_t i = 0; i < cols; ++i) {
      const double xh = (xr[i] - double(mean[r])) * rstd[r];
      const double gw = w ? double(gr[i]) * w[i] : gr[i];
      dx[r * cols + i] = float(rstd[r] * (gw - a - xh * c));
    }
  }
}

}  // namespace xg::vec::scalar
