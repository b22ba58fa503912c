// matmul: 2-D, batched, and batched-times-2-D, either operand transposed, on the packed GEMM.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/kernels/gemm.hpp"
#include "autograd/ops.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/ops/broadcast.hpp"
#include "autograd/parallel.hpp"
#include "autograd/precision.hpp"

namespace xg {

namespace {
Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// How the GEMM reads one operand's matrices: row-major with leading dimension ld, or stored
// transposed (column-major), which flips the operand's transpose flag instead of copying.
struct MatrixLayout {
  bool ok = false, flipped = false;
  size_t ld = 0;
};
MatrixLayout layout_of(const Tensor& t) {
  const size_t r = t.size(-2), c = t.size(-1);
  const int64_t sr = t.strides()[t.dim() - 2], sc = t.strides()[t.dim() - 1];
  if ((c == 1 || sc == 1) && (r == 1 || sr >= int64_t(c))) return {true, false, r == 1 ? c : size_t(sr)};
  if ((r == 1 || sr == 1) && (c == 1 || sc >= int64_t(r))) return {true, true, c == 1 ? r : size_t(sc)};
  return {};
}

// Element offset of every matrix of `t` for each index of the broadcast batch shape `batch`.
std::vector<size_t> batch_offsets(const Tensor& t, const Shape& batch) {
  const size_t nb = detail::prod(batch, 0, batch.size()), rank = batch.size();
  const size_t lead = rank - (t.dim() - 2);
  std::vector<size_t> strides(rank, 0);
  for (size_t i = lead; i < rank; ++i)
    if (t.shape()[i - lead] != 1) strides[i] = size_t(t.strides()[i - lead]);
  std::vector<size_t> out(nb), index(rank, 0);
  size_t off = t.offset();
  for (size_t b = 0; b < nb; ++b) {
    out[b] = off;
    for (size_t d = rank; d-- > 0;) {  // odometer
      off += strides[d];
      if (++index[d] < batch[d]) break;
      off -= strides[d] * batch[d];
      index[d] = 0;
    }
  }
  return out;
}
// The float-B overload of sgemm_bf16, as a plain function with sgemm's type.
void plain_sgemm_bf16(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha, const float* A,
                      size_t lda, const float* B, size_t ldb, float beta, float* C, size_t ldc,
                      const gemm::Epilogue& epilogue) {
  gemm::sgemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, epilogue);
}
using GemmFn = void (*)(bool, bool, size_t, size_t, size_t, float, const float*, size_t, const float*, size_t, float,
                        float*, size_t, const gemm::Epilogue&);
GemmFn gemm_for(bool bf16) { return bf16 ? plain_sgemm_bf16 : gemm::sgemm; }

// matmul() with its single GEMM in bf16 or not; the backward GEMMs are always fp32 (they run with
// gradients off, where matmul() itself would choose bf16 at BF16 precision).
Tensor matmul_as(const Tensor& a_in, const Tensor& b_in, bool ta, bool tb, bool bf16) {
  if (a_in.dim() < 2 || b_in.dim() < 2)
    throw std::invalid_argument(fmt::format("[matmul] operands need at least 2 axes, got {} and {}",
                                            shape_str(a_in.shape()), shape_str(b_in.shape())));
  const size_t ar = a_in.size(-2), ac = a_in.size(-1), br = b_in.size(-2), bc = b_in.size(-1);
  const size_t M = ta ? ac : ar, K = ta ? ar : ac, Kb = tb ? bc : br, N = tb ? br : bc;
  if (K != Kb)
    throw std::invalid_argument(fmt::format(
        "[matmul] inner sizes differ: op(a) is {}x{} (a {}{}), op(b) is {}x{} (b {}{})", M, K,
        shape_str(a_in.shape()), ta ? " transposed" : "", Kb, N, shape_str(b_in.shape()),
        tb ? " transposed" : ""));
  const Shape ba = batch_of(a_in), bb = batch_of(b_in);
  const Shape batch = detail::broadcast_shapes(ba, bb, "matmul");
  const size_t nb = detail::prod(batch, 0, batch.size());
  Shape out_shape = batch;
  out_shape.insert(out_shape.end(), {M, N});
  Tensor out = Tensor::empty(out_shape);
  // Operands the GEMM cannot read through their strides are packed first.
  const MatrixLayout la0 = layout_of(a_in), lb0 = layout_of(b_in);
  const Tensor a = la0.ok ? detail::checked_float(a_in, "matmul") : detail::dense(a_in, "matmul");
  const Tensor b = lb0.ok ? detail::checked_float(b_in, "matmul") : detail::dense(b_in, "matmul");
  const MatrixLayout la = layout_of(a), lb = layout_of(b);
  const float* pa = static_cast<const float*>(a.impl()->storage->data());
  const float* pb = static_cast<const float*>(b.impl()->storage->data());
  if (bb.empty() && !ta && a.is_contiguous()) {  // (batch*M, K) @ op(B): one large GEMM
    gemm_for(bf16)(false, tb != lb.flipped, nb * M, N, K, 1.f, a.data(), ac, pb + b.offset(), lb.ld, 0.f,
                   out.data(), N, {});
  } else {
    const std::vector<size_t> oa = batch_offsets(a, batch), ob = batch_offsets(b, batch);
    std::vector<size_t> oc(nb);
    for (size_t i = 0; i < nb; ++i) oc[i] = i * M * N;
    gemm::sgemm_batched_offsets(ta != la.flipped, tb != lb.flipped, nb, M, N, K, 1.f, pa, la.ld,
                                oa.data(), pb, lb.ld, ob.data(), 0.f, out.data(), N, oc.data());
  }
  const Tensor A = a_in.detach(), B = b_in.detach();
  const bool need_a = a_in.requires_grad(), need_b = b_in.requires_grad();
  const std::vector<Tensor> saved{need_b ? A : Tensor(), need_a ? B : Tensor()};  // each is read for the other's gradient
  out = record("matmul", out, {a_in, b_in}, saved, [=](const Tensor& g) -> std::vector<Tensor> {
    Tensor ga, gb;
    if (need_a) {
      // d op(A) = g op(B)^T; when A is stored transposed, dA = op(B) g^T.
      ga = ta ? matmul_as(B, g, tb, true, false) : matmul_as(g, B, false, !tb, false);
      ga = detail::sum_to(ga, A.shape());
    }
    if (need_b) {
      if (B.dim() == 2 && A.dim() > 2 && !ta) {
        // Shared 2-D B: fold the batch into rows so the reduction is one GEMM.
        const long rows = long(leading_numel(A.shape()));  // not -1: reshape cannot infer it when K or N is 0
        const Tensor A2 = reshape(A, {rows, long(K)}), g2 = reshape(g, {rows, long(N)});
        gb = tb ? matmul_as(g2, A2, true, false, false) : matmul_as(A2, g2, true, false, false);
      } else {
        // d op(B) = op(A)^T g; when B is stored transposed, dB = g^T op(A).
        gb = tb ? matmul_as(g, A, true, ta, false) : matmul_as(A, g, !ta, false, false);
        gb = detail::sum_to(gb, B.shape());
      }
    }
    return {ga, gb};
  });
  accept_strided_grad(out);  // the backward GEMMs read g through its strides
  return out;
}
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) { return matmul_as(a, b, ta, tb, bf16_forward_now()); }

namespace {
// linear's checks, naming the op: x (..., in), bias (out) or undefined. Returns the rows of x.
size_t check_linear(const Tensor& x, size_t in, size_t out, const Tensor& bias, const std::string& weight_shape) {
  if (x.dim() == 0 || x.shape().back() != in)
    throw std::invalid_argument(fmt::format("[linear] input {} does not match weight {} (out, in)", shape_str(x.shape()),
                                            weight_shape));
  if (bias.defined() && bias.shape() != Shape{out})
    throw std::invalid_argument(fmt::format("[linear] bias {} does not match weight {}", shape_str(bias.shape()), weight_shape));
  return leading_numel(x.shape());
}

Tensor linear_output(const Tensor& x, size_t out) {
  Shape shape = x.shape();
  shape.back() = out;
  return Tensor::empty(shape);
}

// dst[c] (+)= sum over rows r of g[r, c] (a bias's gradient; += when `add`), rows summed in order
// as sum(g, {0}) does. Threads take column blocks: the rows in one thread were the bias
// gradient's serial share of a mini step. A column is `rows` floats of work, so the blocks are
// parallel_rows' tasks over the (cols, rows) transpose: a fixed 256 columns kept mini's 256-wide
// biases (1024 rows) on one thread.
void add_column_sums(const float* g, size_t rows, size_t cols, float* dst, bool add) {
  if (rows == 0) {
    if (!add) std::fill(dst, dst + cols, 0.f);
    return;
  }
  parallel_rows(cols, rows, [&](size_t c0, size_t c1) {
    std::vector<float> scratch(add ? c1 - c0 : 0);  // the sum apart, then added: as sum() then +=
    float* total = add ? scratch.data() : dst + c0;
    std::copy(g + c0, g + c1, total);
    for (size_t r = 1; r < rows; ++r) vec::add(total, g + r * cols + c0, total, c1 - c0);
    if (add) vec::add(dst + c0, total, dst + c0, c1 - c0);
  });
}

}  // namespace

Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in) {
  const Tensor x = detail::dense(x_in, "linear"), weight = detail::dense(weight_in, "linear");
  const Tensor bias = bias_in.defined() ? detail::dense(bias_in, "linear") : Tensor();
  if (weight.dim() != 2)
    throw std::invalid_argument(fmt::format("[linear] weight {} must be (out, in)", shape_str(weight.shape())));
  const size_t K = weight.size(1), N = weight.size(0), M = check_linear(x, K, N, bias, shape_str(weight.shape()));
  Tensor out = linear_output(x, N);
  const bool bf16 = bf16_linear_now();  // the backward GEMMs follow the forward's choice
  const GemmFn gemm_fn = gemm_for(bf16);
  gemm_fn(false, true, M, N, K, 1.f, x.data(), K, weight.data(), K, 0.f, out.data(), N,
          {bias.defined() ? bias.data() : nullptr});
  const Tensor X = x.detach(), W = weight.detach();
  const bool need_x = x_in.requires_grad(), need_w = weight_in.requires_grad(),
             need_b = bias_in.defined() && bias_in.requires_grad();
  return record_into("linear", out, {x_in, weight_in, bias_in}, {need_w ? X : Tensor(), need_x ? W : Tensor()},
                     [=](const Tensor& g, const std::vector<GradInto>& into) -> std::vector<Tensor> {
    Tensor gx, gw, gb;
    if (need_x) {  // (M, N) @ (N, K)
      gx = Tensor::empty(X.shape());
      gemm_fn(false, false, M, K, N, 1.f, g.data(), N, W.data(), K, 0.f, gx.data(), K, nullptr);
    }
    if (need_w) {  // (N, M) @ (M, K), accumulated into the weight's own gradient where it has one
      const GradInto& w = into[1];
      Tensor dst = w.dst.defined() ? w.dst : (gw = Tensor::empty(W.shape()));
      gemm_fn(true, false, N, K, M, 1.f, g.data(), N, X.data(), K, w.dst.defined() && !w.fresh ? 1.f : 0.f, dst.data(), K,
              nullptr);
    }
    if (need_b) {
      const GradInto& b = into[2];
      Tensor dst = b.dst.defined() ? b.dst : (gb = Tensor::empty({N}));
      add_column_sums(g.data(), M, N, dst.data(), b.dst.defined() && !b.fresh);
    }
    return {gx, gw, gb};
  });
}

Tensor linear(const Tensor& x_in, const gemm::PackedB& weight, const Tensor& bias_in) {
  if (grad_enabled() && (x_in.requires_grad() || (bias_in.defined() && bias_in.requires_grad())))
    throw std::logic_error("[linear] a packed weight serves forward passes only: run it with gradients off (NoGradGuard)");
  const Tensor x = detail::dense(x_in, "linear");
  const Tensor bias = bias_in.defined() ? detail::dense(bias_in, "linear") : Tensor();
  const size_t K = weight.K(), N = weight.N();
  const size_t M = check_linear(x, K, N, bias, fmt::format("[{}, {}] (packed)", N, K));
  Tensor out = linear_output(x, N);
  gemm::sgemm_packed(false, M, 1.f, x.data(), K, weight, 0.f, out.data(), N, {bias.defined() ? bias.data() : nullptr});
  return out;
}

}  // namespace xg
