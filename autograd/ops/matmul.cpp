// matmul: 2-D, batched, and batched-times-2-D, either operand transposed, on the packed GEMM.
#include <fmt/format.h>

#include "autograd/engine.hpp"
#include "autograd/kernels/gemm.hpp"
#include "autograd/ops.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/ops/broadcast.hpp"
#include "autograd/parallel.hpp"

namespace xg {

namespace {
Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  if (a.dim() < 2 || b.dim() < 2)
    throw std::invalid_argument(fmt::format("[matmul] operands need at least 2 axes, got {} and {}",
                                            shape_str(a.shape()), shape_str(b.shape())));
  const size_t ar = a.size(-2), ac = a.size(-1), br = b.size(-2), bc = b.size(-1);
  const size_t M = ta ? ac : ar, K = ta ? ar : ac, Kb = tb ? bc : br, N = tb ? br : bc;
  if (K != Kb)
    throw std::invalid_argument(fmt::format(
        "[matmul] inner sizes differ: op(a) is {}x{} (a {}{}), op(b) is {}x{} (b {}{})", M, K,
        shape_str(a.shape()), ta ? " transposed" : "", Kb, N, shape_str(b.shape()),
        tb ? " transposed" : ""));
  const Shape ba = batch_of(a), bb = batch_of(b);
  if (!ba.empty() && !bb.empty() && ba != bb) {  // broadcast the batch axes, then recurse
    Shape bs = detail::broadcast_shapes(ba, bb, "matmul");
    Shape sa = bs, sb = bs;
    sa.insert(sa.end(), {ar, ac});
    sb.insert(sb.end(), {br, bc});
    return matmul(expand(a, sa), expand(b, sb), ta, tb);
  }
  const Shape batch = ba.empty() ? bb : ba;
  const size_t nb = detail::prod(batch, 0, batch.size());
  Shape out_shape = batch;
  out_shape.insert(out_shape.end(), {M, N});
  Tensor out = Tensor::empty(out_shape);
  if (bb.empty() && !ta) {  // (batch*M, K) @ op(B): one large GEMM
    gemm::sgemm(false, tb, nb * M, N, K, 1.f, a.data(), ac, b.data(), bc, 0.f, out.data(), N);
  } else {
    gemm::sgemm_batched(ta, tb, nb, M, N, K, 1.f, a.data(), ac, ba.empty() ? 0 : ar * ac,
                        b.data(), bc, bb.empty() ? 0 : br * bc, 0.f, out.data(), N, M * N);
  }
  const Tensor A = a.detach(), B = b.detach();
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  return record("matmul", out, {a, b}, [=](const Tensor& g) -> std::vector<Tensor> {
    Tensor ga, gb;
    if (need_a) {
      // d op(A) = g op(B)^T; when A is stored transposed, dA = op(B) g^T.
      ga = ta ? matmul(B, g, tb, true) : matmul(g, B, false, !tb);
      ga = detail::sum_to(ga, A.shape());
    }
    if (need_b) {
      if (B.dim() == 2 && A.dim() > 2 && !ta) {
        // Shared 2-D B: fold the batch into rows so the reduction is one GEMM.
        const Tensor A2 = reshape(A, {-1, long(K)}), g2 = reshape(g, {-1, long(N)});
        gb = tb ? matmul(g2, A2, true, false) : matmul(A2, g2, true, false);
      } else {
        // d op(B) = op(A)^T g; when B is stored transposed, dB = g^T op(A).
        gb = tb ? matmul(g, A, true, ta) : matmul(A, g, !ta, false);
        gb = detail::sum_to(gb, B.shape());
      }
    }
    return {ga, gb};
  });
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.dim() != 2 || x.dim() == 0 || x.shape().back() != weight.size(1))
    throw std::invalid_argument(fmt::format("[linear] input {} does not match weight {} (out, in)", shape_str(x.shape()),
                                            shape_str(weight.shape())));
  const size_t K = weight.size(1), N = weight.size(0), M = x.numel() / K;
  if (bias.defined() && bias.shape() != Shape{N})
    throw std::invalid_argument(fmt::format("[linear] bias {} does not match weight {}", shape_str(bias.shape()),
                                            shape_str(weight.shape())));
  Shape out_shape = x.shape();
  out_shape.back() = N;
  Tensor out = Tensor::empty(out_shape);
  gemm::sgemm(false, true, M, N, K, 1.f, x.data(), K, weight.data(), K, 0.f, out.data(), N);
  if (bias.defined()) {
    float* y = out.data();
    const float* b = bias.data();
    parallel_range(M, std::max<size_t>(1, 16384 / N), [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) vec::add(y + r * N, b, y + r * N, N);
    });
  }
  const Tensor X = x.detach(), W = weight.detach();
  const bool need_x = x.requires_grad(), need_w = weight.requires_grad(),
             need_b = bias.defined() && bias.requires_grad();
  return record("linear", out, {x, weight, bias}, [=](const Tensor& g) -> std::vector<Tensor> {
    Tensor gx, gw, gb;
    if (need_x) {  // (M, N) @ (N, K)
      gx = Tensor::empty(X.shape());
      gemm::sgemm(false, false, M, K, N, 1.f, g.data(), N, W.data(), K, 0.f, gx.data(), K);
    }
    if (need_w) {  // (N, M) @ (M, K)
      gw = Tensor::empty(W.shape());
      gemm::sgemm(true, false, N, K, M, 1.f, g.data(), N, X.data(), K, 0.f, gw.data(), K);
    }
    if (need_b) gb = reshape(sum(reshape(g, {long(M), long(N)}), {0}), {long(N)});
    return {gx, gw, gb};
  });
}

}  // namespace xg
