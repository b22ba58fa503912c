// SIMD kernels (xsimd). Each loop runs whole batches, then finishes the tail with the float
// overload of the same functor, except where that overload computes other bits (tanh, exp, GELU):
// there the tail goes through the batch code, padded, so an element's value does not depend on
// the length of the array it is in (a batch of one and of two sentences give the same logits).
#include "autograd/kernels/vec.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "autograd/kernels/vec_ops.hpp"

namespace xg::vec {
using namespace detail;

namespace {
constexpr size_t W = kSimdWidth;

inline fbatch load(const float* p) { return fbatch::load_unaligned(p); }

template <class F>
void map1(const float* x, float* out, size_t n, F f) {
  size_t i = 0;
  for (; i + W <= n; i += W) f(load(x + i)).store_unaligned(out + i);
  if (i == n) return;
  float tx[W] = {}, to[W];
  std::copy_n(x + i, n - i, tx);
  f(load(tx)).store_unaligned(to);
  std::copy_n(to, n - i, out + i);
}

template <class F>
void map2(const float* x, const float* g, float* out, size_t n, F f) {
  size_t i = 0;
  for (; i + W <= n; i += W) f(load(x + i), load(g + i)).store_unaligned(out + i);
  if (i == n) return;
  float tx[W] = {}, tg[W] = {}, to[W];
  std::copy_n(x + i, n - i, tx), std::copy_n(g + i, n - i, tg);
  f(load(tx), load(tg)).store_unaligned(to);
  std::copy_n(to, n - i, out + i);
}

// unary_backward of one row of unary_ops.def: its Grad functor, or an error for NoGrad.
template <class Grad>
void map_grad(const float* x, const float* g, float* out, size_t n) {
  if constexpr (std::is_same_v<Grad, NoGrad>)
    throw std::logic_error("[unary_backward] op has no fused backward kernel");
  else
    map2(x, g, out, n, Grad{});
}

template <class F>
void binary_strided(const float* a, size_t sa, const float* b, size_t sb, float* out, size_t n,
                    F f) {
  size_t i = 0;
  if (sa && sb) {
    for (; i + W <= n; i += W) f(load(a + i), load(b + i)).store_unaligned(out + i);
    for (; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (sa) {
    const fbatch vb(b[0]);
    for (; i + W <= n; i += W) f(load(a + i), vb).store_unaligned(out + i);
    for (; i < n; ++i) out[i] = f(a[i], b[0]);
  } else if (sb) {
    const fbatch va(a[0]);
    for (; i + W <= n; i += W) f(va, load(b + i)).store_unaligned(out + i);
    for (; i < n; ++i) out[i] = f(a[0], b[i]);
  } else {
    const float v = f(a[0], b[0]);
    for (; i < n; ++i) out[i] = v;
  }
}

float row_max(const float* x, size_t n) {
  size_t i = 0;
  float m = -INFINITY;
  if (n >= W) {
    fbatch acc = load(x);
    for (i = W; i + W <= n; i += W) acc = xsimd::max(acc, load(x + i));
    m = hmax(acc);
  }
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

// sum(f(x[i])) with four independent accumulators to hide FMA latency.
template <class F>
float reduce_sum(const float* x, size_t n, F f) {
  fbatch a0(0.f), a1(0.f), a2(0.f), a3(0.f);
  size_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    a0 += f(load(x + i));
    a1 += f(load(x + i + W));
    a2 += f(load(x + i + 2 * W));
    a3 += f(load(x + i + 3 * W));
  }
  for (; i + W <= n; i += W) a0 += f(load(x + i));
  float s = hsum((a0 + a1) + (a2 + a3));
  for (; i < n; ++i) s += f(x[i]);
  return s;
}

struct Identity {
  template <class T> T operator()(const T& x) const { return x; }
};

float dot(const float* a, const float* b, size_t n) {
  fbatch a0(0.f), a1(0.f);
  size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    a0 = xsimd::fma(load(a + i), load(b + i), a0);
    a1 = xsimd::fma(load(a + i + W), load(b + i + W), a1);
  }
  for (; i + W <= n; i += W) a0 = xsimd::fma(load(a + i), load(b + i), a0);
  float s = hsum(a0 + a1);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}
}  // namespace

void binary(Binary op, const float* a, size_t sa, const float* b, size_t sb, float* out, size_t n) {
  switch (op) {
#define XG_BINARY(name) \
  case Binary::name: return binary_strided(a, sa, b, sb, out, n, name{});
#include "autograd/kernels/binary_ops.def"
#undef XG_BINARY
  }
}

void add(const float* a, const float* b, float* out, size_t n) {
  binary_strided(a, 1, b, 1, out, n, Add{});
}

void axpy(float alpha, const float* x, float* y, size_t n) {
  const fbatch va(alpha);
  size_t i = 0;
  for (; i + W <= n; i += W) xsimd::fma(va, load(x + i), load(y + i)).store_unaligned(y + i);
  for (; i < n; ++i) y[i] += alpha * x[i];
}

void scale(const float* x, float alpha, float* out, size_t n) {
  binary_strided(x, 1, &alpha, 0, out, n, Mul{});
}

void dropout_apply(const uint32_t* bits, uint32_t threshold, const float* x, float scale, float* out,
                   size_t n) {
  // Unsigned compare as one signed compare with the top bit flipped (xsimd 8's unsigned compare
  // is two SSE halves on AVX2); the kept lanes' mask is all ones, so `and` leaves x * scale there
  // and +0 elsewhere.
  using ibatch = xsimd::batch<int32_t, fbatch::arch_type>;
  const ibatch flip(std::numeric_limits<int32_t>::min()), t(int32_t(threshold ^ 0x80000000u));
  const fbatch vs(scale);
  const auto* ibits = reinterpret_cast<const int32_t*>(bits);
  size_t i = 0;
  for (; i + W <= n; i += W) {
    const ibatch keep = xsimd::select((ibatch::load_unaligned(ibits + i) ^ flip) < t, ibatch(0), ibatch(-1));
    ((load(x + i) * vs) & xsimd::bitwise_cast<fbatch>(keep)).store_unaligned(out + i);
  }
  for (; i < n; ++i) out[i] = bits[i] >= threshold ? x[i] * scale : 0.f;
}

void adam(const AdamStep& c, float* w, const float* g, float* m, float* v, size_t n) {
  auto step = [&](float* wi, const float* gi, float* mi, float* vi) {
    fbatch bw = load(wi), bm = load(mi), bv = load(vi);
    detail::adam_update(c, bw, load(gi), bm, bv);
    bw.store_unaligned(wi), bm.store_unaligned(mi), bv.store_unaligned(vi);
  };
  size_t i = 0;
  for (; i + W <= n; i += W) step(w + i, g + i, m + i, v + i);
  if (i == n) return;
  // The tail through the same batch code (padded), so an element's bits do not depend on where
  // the optimizer's thread chunks begin and end.
  float tw[W] = {}, tg[W] = {}, tm[W] = {}, tv[W] = {};
  const size_t rest = n - i;
  std::copy_n(w + i, rest, tw), std::copy_n(g + i, rest, tg), std::copy_n(m + i, rest, tm), std::copy_n(v + i, rest, tv);
  step(tw, tg, tm, tv);
  std::copy_n(tw, rest, w + i), std::copy_n(tm, rest, m + i), std::copy_n(tv, rest, v + i);
}

void lamb_direction(const LambStep& c, const float* w, const float* g, float* m, float* v, float* r, size_t n,
                    double sums[2]) {
  size_t i = 0;
  while (i + W <= n) {  // float lanes over 64 vectors at a time, then into the double sums
    fbatch w_sq(0.f), r_sq(0.f);
    for (const size_t end = std::min(n - n % W, i + 64 * W); i < end; i += W) {
      const fbatch bw = load(w + i);
      fbatch bm = load(m + i), bv = load(v + i);
      const fbatch br = detail::lamb_update(c, bw, load(g + i), bm, bv);
      bm.store_unaligned(m + i), bv.store_unaligned(v + i), br.store_unaligned(r + i);
      w_sq = xsimd::fma(bw, bw, w_sq);
      r_sq = xsimd::fma(br, br, r_sq);
    }
    sums[0] += double(hsum(w_sq));
    sums[1] += double(hsum(r_sq));
  }
  scalar::lamb_direction(c, w + i, g + i, m + i, v + i, r + i, n - i, sums);
}

void unary(Unary op, const float* x, float* out, size_t n) {
  switch (op) {
#define XG_UNARY(name, ...) \
  case Unary::name: return map1(x, out, n, name{});
#include "autograd/kernels/unary_ops.def"
#undef XG_UNARY
  }
}

bool has_backward_kernel(Unary op) {
  switch (op) {
#define XG_UNARY(name, grad, ...) \
  case Unary::name: return !std::is_same_v<grad, NoGrad>;
#include "autograd/kernels/unary_ops.def"
#undef XG_UNARY
  }
  return false;
}

GradFrom backward_reads(Unary op) {
  switch (op) {
#define XG_UNARY(name, grad, from, ...) \
  case Unary::name: return GradFrom::from;
#include "autograd/kernels/unary_ops.def"
#undef XG_UNARY
  }
  return GradFrom::Input;
}

const char* op_name(Unary op) {
  switch (op) {
#define XG_UNARY(name, grad, from, op_name, ...) \
  case Unary::name: return op_name;
#include "autograd/kernels/unary_ops.def"
#undef XG_UNARY
  }
  return "unary";
}

void pow_scalar(const float* x, float p, float* out, size_t n) {
  if (p == 2.f) return binary_strided(x, 1, x, 1, out, n, Mul{});
  const fbatch vp(p);
  size_t i = 0;
  for (; i + W <= n; i += W) {
    const fbatch v = load(x + i);
    // xsimd's pow is exp(p log x): it gives 0 for 0^p and NaN for a negative base, so a batch
    // holding any base outside (0, inf) takes std::pow (0^0 = 1, 0^-1 = inf, (-2)^3 = -8).
    if (xsimd::any(!((v > fbatch(0.f)) && (v < fbatch(INFINITY))))) {
      for (size_t k = i; k < i + W; ++k) out[k] = std::pow(x[k], p);
      continue;
    }
    xsimd::pow(v, vp).store_unaligned(out + i);
  }
  for (; i < n; ++i) out[i] = std::pow(x[i], p);
}

void unary_backward(Unary op, const float* xy, const float* g, float* dx, size_t n) {
  switch (op) {
#define XG_UNARY(name, grad, ...) \
  case Unary::name: return map_grad<grad>(xy, g, dx, n);
#include "autograd/kernels/unary_ops.def"
#undef XG_UNARY
  }
}

float sum(const float* x, size_t n) { return reduce_sum(x, n, Identity{}); }

double sum_shifted(const float* x, float shift, size_t n) {
  const fbatch vshift(shift);
  double total = 0;
  size_t i = 0;
  while (i + 2 * W <= n) {  // two float accumulators over <= 32 vectors, then into the double
    fbatch a0(0.f), a1(0.f);
    for (const size_t end = std::min(n - n % (2 * W), i + 32 * W); i < end; i += 2 * W) {
      a0 += load(x + i) - vshift;
      a1 += load(x + i + W) - vshift;
    }
    total += double(hsum(a0 + a1));
  }
  return total + scalar::sum_shifted(x + i, shift, n - i);
}

float max(const float* x, size_t n) { return row_max(x, n); }

void softmax(const float* x, float* y, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const float m = row_max(xr, cols);
    const fbatch vm(m);
    fbatch acc(0.f);
    size_t i = 0;
    for (; i + W <= cols; i += W) {
      const fbatch e = xsimd::exp(load(xr + i) - vm);
      e.store_unaligned(yr + i);
      acc += e;
    }
    float s = hsum(acc);
    for (; i < cols; ++i) s += (yr[i] = std::exp(xr[i] - m));
    scale(yr, 1.f / s, yr, cols);
  }
}

void softmax_backward(const float* y, const float* g, float* dx, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float* yr = y + r * cols;
    const float* gr = g + r * cols;
    const fbatch vd(dot(yr, gr, cols));
    float* dr = dx + r * cols;
    size_t i = 0;
    for (; i + W <= cols; i += W) (load(yr + i) * (load(gr + i) - vd)).store_unaligned(dr + i);
    const float d = vd.get(0);
    for (; i < cols; ++i) dr[i] = yr[i] * (gr[i] - d);
  }
}

float log_sum_exp(const float* x, size_t n) {
  const float m = row_max(x, n);
  const fbatch vm(m);
  const float s = reduce_sum(x, n, [&](auto v) {
    if constexpr (std::is_same_v<decltype(v), float>) return std::exp(v - m);
    else return xsimd::exp(v - vm);
  });
  return m + std::log(s);
}

void log_softmax(const float* x, float* y, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float lse = log_sum_exp(x + r * cols, cols);
    binary_strided(x + r * cols, 1, &lse, 0, y + r * cols, cols, Sub{});
  }
}

void cross_entropy_grad(const float* x, float lse, float smooth, size_t target, float target_sub,
                        float g, float* dx, size_t n) {
  const fbatch vl(lse), vs(smooth), vg(g);
  const size_t target_batch = target - target % W;
  const auto step = [&](const float* xi, float* di, size_t i) {
    fbatch d = xsimd::exp(load(xi) - vl) - vs;
    if (i == target_batch) {
      alignas(64) float lane[W] = {};
      lane[target - i] = target_sub;
      d -= fbatch::load_aligned(lane);  // the other lanes lose 0: the same bits
    }
    (d * vg).store_unaligned(di);
  };
  size_t i = 0;
  for (; i + W <= n; i += W) step(x + i, dx + i, i);
  if (i == n) return;
  float tx[W] = {}, td[W];  // the tail through the same code, as map1 does
  std::copy_n(x + i, n - i, tx);
  step(tx, td, i);
  std::copy_n(td, n - i, dx + i);
}

void log_softmax_backward(const float* y, const float* g, float* dx, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float* yr = y + r * cols;
    const float* gr = g + r * cols;
    float* dr = dx + r * cols;
    const float s = sum(gr, cols);
    const fbatch vs(s);
    size_t i = 0;
    for (; i + W <= cols; i += W)
      xsimd::fnma(xsimd::exp(load(yr + i)), vs, load(gr + i)).store_unaligned(dr + i);
    for (; i < cols; ++i) dr[i] = gr[i] - std::exp(yr[i]) * s;
  }
}

void layer_norm(const float* x, const float* w, const float* b, float* y, float* mean,
                float* rstd, size_t rows, size_t cols, float eps) {
  const float inv_n = 1.f / float(cols);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const float mu = sum(xr, cols) * inv_n;
    const fbatch vmu(mu);
    // Two passes: the centred variance does not cancel catastrophically.
    const float var = reduce_sum(xr, cols, [&](auto v) {
      if constexpr (std::is_same_v<decltype(v), float>) return (v - mu) * (v - mu);
      else { const fbatch d = v - vmu; return d * d; }
    }) * inv_n;
    const float rs = 1.f / std::sqrt(var + eps);
    mean[r] = mu;
    rstd[r] = rs;
    const fbatch vrs(rs);
    size_t i = 0;
    for (; i + W <= cols; i += W) {
      fbatch v = (load(xr + i) - vmu) * vrs;
      if (w) v *= load(w + i);
      if (b) v += load(b + i);
      v.store_unaligned(yr + i);
    }
    for (; i < cols; ++i) {
      float v = (xr[i] - mu) * rs;
      if (w) v *= w[i];
      if (b) v += b[i];
      yr[i] = v;
    }
  }
}

void layer_norm_backward(const float* x, const float* w, const float* mean, const float* rstd,
                         const float* g, float* dx, float* dw, float* db, size_t rows,
                         size_t cols) {
  const float inv_n = 1.f / float(cols);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* gr = g + r * cols;
    float* dr = dx + r * cols;
    const fbatch vmu(mean[r]), vrs(rstd[r]);
    // gw = g * w, xhat = (x - mean) * rstd; dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))
    fbatch s_gw(0.f), s_gwx(0.f);
    size_t i = 0;
    for (; i + W <= cols; i += W) {
      const fbatch xh = (load(xr + i) - vmu) * vrs;
      const fbatch gv = load(gr + i);
      const fbatch gw = w ? gv * load(w + i) : gv;
      s_gw += gw;
      s_gwx = xsimd::fma(gw, xh, s_gwx);
      if (dw) xsimd::fma(gv, xh, load(dw + i)).store_unaligned(dw + i);
      if (db) (load(db + i) + gv).store_unaligned(db + i);
    }
    float sum_gw = hsum(s_gw);
    float sum_gwx = hsum(s_gwx);
    const size_t tail = i;
    for (; i < cols; ++i) {
      const float xh = (xr[i] - mean[r]) * rstd[r];
      const float gw = w ? gr[i] * w[i] : gr[i];
      sum_gw += gw;
      sum_gwx += gw * xh;
      if (dw) dw[i] += gr[i] * xh;
      if (db) db[i] += gr[i];
    }
    const float a = sum_gw * inv_n, c = sum_gwx * inv_n;
    const fbatch va(a), vc(c);
    for (i = 0; i + W <= cols; i += W) {
      const fbatch xh = (load(xr + i) - vmu) * vrs;
      const fbatch gw = w ? load(gr + i) * load(w + i) : load(gr + i);
      (vrs * (gw - va - xh * vc)).store_unaligned(dr + i);
    }
    for (i = tail; i < cols; ++i) {
      const float xh = (xr[i] - mean[r]) * rstd[r];
      const float gw = w ? gr[i] * w[i] : gr[i];
      dr[i] = rstd[r] * (gw - a - xh * c);
    }
  }
}

}  // namespace xg::vec
