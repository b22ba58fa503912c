// Element-wise ops: broadcasting binaries, unary maps, where/masked_fill/expand.
// Forward and backward side by side; backward closures capture detached tensors only.
#include <fmt/format.h>

#include <cstring>

#include "autograd/engine.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops/broadcast.hpp"
#include "autograd/parallel.hpp"

namespace xg {
using detail::sum_to;

namespace {

// out = a (op) b with broadcasting; innermost runs go to the SIMD kernel.
Tensor binary_forward(vec::Binary op, const Tensor& a_in, const Tensor& b_in, const char* name) {
  const Tensor a = detail::dense(a_in, name), b = detail::dense(b_in, name);
  const Shape out_shape = detail::broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(out_shape);
  if (a.shape() == b.shape()) {
    vec::binary(op, a.data(), 1, b.data(), 1, out.data(), out.numel());
    return out;
  }
  const auto sa = detail::broadcast_strides(a.shape(), out_shape);
  const auto sb = detail::broadcast_strides(b.shape(), out_shape);
  const float *pa = a.data(), *pb = b.data();
  float* po = out.data();
  const size_t last = out_shape.empty() ? 0 : out_shape.size() - 1;
  const size_t ia = out_shape.empty() ? 0 : sa[last], ib = out_shape.empty() ? 0 : sb[last];
  detail::for_each_run(out_shape, {sa, sb}, [&](size_t o, const size_t* off, size_t n) {
    vec::binary(op, pa + off[0], ia, pb + off[1], ib, po + o, n);
  });
  return out;
}

Tensor unary_forward(vec::Unary op, const Tensor& x_in) {
  const Tensor x = detail::dense(x_in, "unary");
  Tensor out = Tensor::empty(x.shape());
  const float* px = x.data();
  float* po = out.data();
  parallel_elements(x.numel(), [&](size_t i0, size_t i1) { vec::unary(op, px + i0, po + i0, i1 - i0); });
  return out;
}

// Backward of ops whose derivative is a fused kernel of x (relu, gelu) or of y (tanh, sigmoid).
Tensor unary_grad(vec::Unary op, const Tensor& x_or_y_in, const Tensor& g_in) {
  const Tensor x_or_y = x_or_y_in.contiguous(), g = g_in.contiguous();
  Tensor dx = Tensor::empty(g.shape());
  const float *pxy = x_or_y.data(), *pg = g.data();
  float* pdx = dx.data();
  parallel_elements(g.numel(), [&](size_t i0, size_t i1) { vec::unary_backward(op, pxy + i0, pg + i0, pdx + i0, i1 - i0); });
  return dx;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(vec::Binary::Add, a, b, "add");
  const Shape sa = a.shape(), sb = b.shape();
  return record("add", out, {a, b}, [sa, sb](const Tensor& g) -> std::vector<Tensor> {
    return {sum_to(g, sa), sum_to(g, sb)};
  });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(vec::Binary::Sub, a, b, "sub");
  const Shape sa = a.shape(), sb = b.shape();
  const bool need_b = b.requires_grad();
  return record("sub", out, {a, b}, [sa, sb, need_b](const Tensor& g) -> std::vector<Tensor> {
    return {sum_to(g, sa), need_b ? sum_to(neg(g), sb) : Tensor()};
  });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(vec::Binary::Mul, a, b, "mul");
  const Tensor da = a.detach(), db = b.detach();
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  const std::vector<Tensor> saved{need_b ? da : Tensor(), need_a ? db : Tensor()};  // each is read for the other's gradient
  return record("mul", out, {a, b}, saved, [da, db, need_a, need_b](const Tensor& g) -> std::vector<Tensor> {
    return {need_a ? sum_to(mul(g, db), da.shape()) : Tensor(),
            need_b ? sum_to(mul(g, da), db.shape()) : Tensor()};
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(vec::Binary::Div, a, b, "div");
  const Tensor da = a.detach(), db = b.detach(), dout = out.detach();
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  return record("div", out, {a, b}, {db, need_b ? dout : Tensor()},
                [da, db, dout, need_a, need_b](const Tensor& g) -> std::vector<Tensor> {
                  const Tensor g_over_b = div(g, db);
                  // d(a/b)/db = -(a/b)/b
                  return {need_a ? sum_to(g_over_b, da.shape()) : Tensor(),
                          need_b ? sum_to(neg(mul(g_over_b, dout)), db.shape()) : Tensor()};
                });
}

Tensor neg(const Tensor& x) {
  Tensor out = unary_forward(vec::Unary::Neg, x);
  return record("neg", out, {x}, [](const Tensor& g) -> std::vector<Tensor> { return {neg(g)}; });
}

Tensor exp(const Tensor& x) {
  Tensor out = unary_forward(vec::Unary::Exp, x);
  const Tensor y = out.detach();
  return record("exp", out, {x}, {y}, [y](const Tensor& g) -> std::vector<Tensor> { return {mul(g, y)}; });
}

Tensor log(const Tensor& x) {
  Tensor out = unary_forward(vec::Unary::Log, x);
  const Tensor dx = x.detach();
  return record("log", out, {x}, {dx}, [dx](const Tensor& g) -> std::vector<Tensor> { return {div(g, dx)}; });
}

Tensor sqrt(const Tensor& x) {
  Tensor out = unary_forward(vec::Unary::Sqrt, x);
  const Tensor y = out.detach();
  return record("sqrt", out, {x}, {y}, [y](const Tensor& g) -> std::vector<Tensor> {
    return {div(mul(g, Tensor::scalar(0.5f)), y)};
  });
}

Tensor pow(const Tensor& x_in, float exponent) {
  const Tensor x = detail::dense(x_in, "pow");
  Tensor out = Tensor::empty(x.shape());
  vec::pow_scalar(x.data(), exponent, out.data(), x.numel());
  const Tensor dx = x.detach();
  return record("pow", out, {x_in}, {dx}, [dx, exponent](const Tensor& g) -> std::vector<Tensor> {
    if (exponent == 0.f) return {Tensor::zeros(dx.shape())};  // x^0 is constant; 0 * 0^-1 would be NaN at 0
    Tensor d = Tensor::empty(dx.shape());  // exponent * x^(exponent-1)
    vec::pow_scalar(dx.data(), exponent - 1.f, d.data(), dx.numel());
    vec::scale(d.data(), exponent, d.data(), d.numel());
    return {mul(g, d)};
  });
}

Tensor apply_unary(vec::Unary op, const Tensor& x) {
  if (!vec::has_backward_kernel(op))
    throw std::invalid_argument(fmt::format("[apply_unary] {} has no backward kernel: call the op itself", vec::op_name(op)));
  Tensor out = unary_forward(op, x);
  const Tensor saved = vec::backward_reads(op) == vec::GradFrom::Output ? out.detach() : x.detach();
  return record(vec::op_name(op), out, {x}, {saved}, [saved, op](const Tensor& g) -> std::vector<Tensor> {
    return {unary_grad(op, saved, g)};
  });
}

Tensor tanh(const Tensor& x) { return apply_unary(vec::Unary::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return apply_unary(vec::Unary::Sigmoid, x); }
Tensor relu(const Tensor& x) { return apply_unary(vec::Unary::Relu, x); }
Tensor gelu(const Tensor& x, GeluApprox approx) {
  return apply_unary(approx == GeluApprox::Tanh ? vec::Unary::GeluTanh : vec::Unary::Gelu, x);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, float b) { return add(a, Tensor::scalar(b)); }
Tensor operator-(const Tensor& a, float b) { return sub(a, Tensor::scalar(b)); }
Tensor operator*(const Tensor& a, float b) { return mul(a, Tensor::scalar(b)); }
Tensor operator/(const Tensor& a, float b) { return div(a, Tensor::scalar(b)); }
Tensor operator+(float a, const Tensor& b) { return add(Tensor::scalar(a), b); }
Tensor operator-(float a, const Tensor& b) { return sub(Tensor::scalar(a), b); }
Tensor operator*(float a, const Tensor& b) { return mul(Tensor::scalar(a), b); }
Tensor operator/(float a, const Tensor& b) { return div(Tensor::scalar(a), b); }

Tensor expand(const Tensor& x, const Shape& shape) {
  const Shape out_shape = detail::broadcast_shapes(x.shape(), shape, "expand");
  if (out_shape != shape)
    throw std::invalid_argument(
        fmt::format("[expand] cannot expand {} to {}", shape_str(x.shape()), shape_str(shape)));
  if (x.shape() == shape) return x;
  // A view: broadcast axes get stride 0, so no element is copied.
  const size_t lead = shape.size() - x.dim();
  Strides st(shape.size(), 0);
  for (size_t i = 0; i < x.dim(); ++i)
    if (x.shape()[i] == shape[lead + i]) st[lead + i] = x.strides()[i];
  Tensor out = Tensor::view_of(x.impl()->storage, x.dtype(), shape, st, x.offset());
  const Shape in_shape = x.shape();
  return record("expand", out, {x}, [in_shape](const Tensor& g) -> std::vector<Tensor> {
    return {sum_to(g, in_shape)};
  });
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  const Shape shape = detail::broadcast_shapes(
      detail::broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor c, ea, eb;
  {
    NoGradGuard no_grad;  // the expansions are internal; the gradient is formed below
    c = detail::dense(expand(cond, shape), "where");
    ea = detail::dense(expand(a, shape), "where");
    eb = detail::dense(expand(b, shape), "where");
  }
  Tensor out = Tensor::empty(shape);
  const float *pc = c.data(), *pa = ea.data(), *pb = eb.data();
  float* po = out.data();
  for (size_t i = 0, n = out.numel(); i < n; ++i) po[i] = pc[i] != 0.f ? pa[i] : pb[i];
  const Shape sa = a.shape(), sb = b.shape();
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  return record("where", out, {cond, a, b}, {c},
                [c, sa, sb, need_a, need_b](const Tensor& g_in) -> std::vector<Tensor> {
                  const Tensor g = g_in.contiguous();
                  Tensor ga, gb;
                  if (need_a) ga = Tensor::zeros(g.shape());
                  if (need_b) gb = Tensor::zeros(g.shape());
                  const float* pc = c.data();
                  for (size_t i = 0, n = g.numel(); i < n; ++i) {
                    if (pc[i] != 0.f) {
                      if (need_a) ga.data()[i] = g.data()[i];
                    } else if (need_b) {
                      gb.data()[i] = g.data()[i];
                    }
                  }
                  return {Tensor(), need_a ? sum_to(ga, sa) : Tensor(),
                          need_b ? sum_to(gb, sb) : Tensor()};
                });
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, float value) {
  const Shape shape = detail::broadcast_shapes(x.shape(), mask.shape(), "masked_fill");
  if (shape != x.shape())
    throw std::invalid_argument(fmt::format("[masked_fill] mask {} does not broadcast to input {}",
                                            shape_str(mask.shape()), shape_str(x.shape())));
  return where(mask, Tensor::scalar(value), x);
}

}  // namespace xg
