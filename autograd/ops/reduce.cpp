// Reductions over axes. Each axis reduces as (outer, len, inner) blocks: inner == 1 is a SIMD
// row sum, inner > 1 adds whole rows of length inner with the SIMD add kernel.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "autograd/engine.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops/broadcast.hpp"

namespace xg {

namespace {

std::vector<size_t> sorted_axes(const std::vector<int>& axes, size_t rank, const char* op) {
  std::vector<size_t> out;
  if (axes.empty()) {
    for (size_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int a : axes) out.push_back(detail::normalize_axis(a, rank, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw std::invalid_argument(fmt::format("[{}] an axis is repeated", op));
  return out;
}

Shape reduced_shape(const Shape& in, const std::vector<size_t>& axes, bool keepdim) {
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced) out.push_back(in[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// Sums one axis of a contiguous (outer, len, inner) buffer into (outer, inner).
void sum_axis(const float* x, float* out, size_t outer, size_t len, size_t inner) {
  for (size_t o = 0; o < outer; ++o) {
    const float* xo = x + o * len * inner;
    float* oo = out + o * inner;
    if (inner == 1) {
      oo[0] = vec::sum(xo, len);
      continue;
    }
    if (len == 0) {
      std::fill_n(oo, inner, 0.f);
      continue;
    }
    std::memcpy(oo, xo, inner * sizeof(float));
    for (size_t k = 1; k < len; ++k) vec::add(oo, xo + k * inner, oo, inner);
  }
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int>& axes_in, bool keepdim) {
  const auto axes = sorted_axes(axes_in, x.dim(), "sum");
  Shape cur = x.shape();
  Tensor acc = detail::dense(x, "sum");
  // Innermost axis first, so `cur` keeps the not-yet-reduced axes at their positions.
  for (size_t i = axes.size(); i-- > 0;) {
    const size_t a = axes[i];
    Shape ns = cur;
    ns[a] = 1;
    Tensor next = Tensor::empty(ns);
    sum_axis(acc.data(), next.data(), detail::prod(cur, 0, a), cur[a],
             detail::prod(cur, a + 1, cur.size()));
    acc = next;
    cur = ns;
  }
  Tensor out = detail::alias_with_shape(axes.empty() ? acc.clone() : acc,
                                        reduced_shape(x.shape(), axes, keepdim));
  const Shape in_shape = x.shape(), kept = reduced_shape(x.shape(), axes, true);
  return record("sum", out, {x}, [in_shape, kept](const Tensor& g) -> std::vector<Tensor> {
    return {expand(reshape(g, std::vector<long>(kept.begin(), kept.end())), in_shape)};
  });
}

Tensor mean(const Tensor& x, const std::vector<int>& axes, bool keepdim) {
  const auto sorted = sorted_axes(axes, x.dim(), "mean");
  size_t count = 1;
  for (size_t a : sorted) count *= x.shape()[a];
  return mul(sum(x, axes, keepdim), Tensor::scalar(1.f / float(count)));
}

Tensor max(const Tensor& x, int axis_in, bool keepdim) {
  const size_t axis = detail::normalize_axis(axis_in, x.dim(), "max");
  const Shape& s = x.shape();
  const size_t outer = detail::prod(s, 0, axis), len = s[axis],
               inner = detail::prod(s, axis + 1, s.size());
  if (len == 0) throw std::invalid_argument("[max] cannot reduce an empty axis");
  const Shape out_shape = reduced_shape(s, {axis}, keepdim);
  Tensor out = Tensor::empty(out_shape);
  auto argmax = std::make_shared<std::vector<uint32_t>>(outer * inner);
  const Tensor xc = detail::dense(x, "max");
  const float* px = xc.data();
  for (size_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < inner; ++i) {
      const float* base = px + o * len * inner + i;
      size_t best = 0;
      float bv = base[0];
      for (size_t k = 1; k < len; ++k)
        if (base[k * inner] > bv || (std::isnan(base[k * inner]) && !std::isnan(bv))) {
          bv = base[k * inner];
          best = k;
        }
      out.data()[o * inner + i] = bv;
      (*argmax)[o * inner + i] = uint32_t(best);
    }
  return record("max", out, {x}, [argmax, s, outer, len, inner](const Tensor& g_in) -> std::vector<Tensor> {
    const Tensor g = g_in.contiguous();
    Tensor dx = Tensor::zeros(s);
    for (size_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < inner; ++i)
        dx.data()[(o * len + (*argmax)[o * inner + i]) * inner + i] = g.data()[o * inner + i];
    return {dx};
  });
}

}  // namespace xg
