// softmax, log_softmax, layer_norm and dropout: fused kernels over rows of the last axis,
// rows split across threads.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "autograd/engine.hpp"
#include "autograd/kernels/random_lanes.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops/broadcast.hpp"
#include "autograd/parallel.hpp"

namespace xg {

namespace {

constexpr size_t kLayerNormChunks = 8;        // row chunks of the layer_norm weight gradient

using RowKernel = void (*)(const float*, float*, size_t, size_t);
using RowBackward = void (*)(const float*, const float*, float*, size_t, size_t);

// softmax and log_softmax share everything but their two kernels.
Tensor softmax_like(const Tensor& x, int axis_in, const char* name, RowKernel fwd, RowBackward bwd) {
  if (x.dim() == 0) throw std::invalid_argument(fmt::format("[{}] needs at least one axis", name));
  const size_t axis = detail::normalize_axis(axis_in, x.dim(), name);
  if (axis != x.dim() - 1) {  // move the axis last, where the kernel works
    Tensor moved = transpose(x, int(axis), -1);
    return transpose(softmax_like(moved, -1, name, fwd, bwd), int(axis), -1);
  }
  const size_t cols = x.shape().back(), rows = cols ? x.numel() / cols : 0;
  Tensor out = Tensor::empty(x.shape());
  const Tensor xc = detail::dense(x, name);
  parallel_rows(rows, cols, [&](size_t r0, size_t r1) {
    fwd(xc.data() + r0 * cols, out.data() + r0 * cols, r1 - r0, cols);
  });
  const Tensor y = out.detach();
  return record(name, out, {x}, {y}, [y, rows, cols, bwd](const Tensor& g) -> std::vector<Tensor> {
    Tensor dx = Tensor::empty(g.shape());
    parallel_rows(rows, cols, [&](size_t r0, size_t r1) {
      bwd(y.data() + r0 * cols, g.data() + r0 * cols, dx.data() + r0 * cols, r1 - r0, cols);
    });
    return {dx};
  });
}

}  // namespace

Tensor softmax(const Tensor& x, int axis) {
  return softmax_like(x, axis, "softmax", vec::softmax, vec::softmax_backward);
}

Tensor log_softmax(const Tensor& x, int axis) {
  return softmax_like(x, axis, "log_softmax", vec::log_softmax, vec::log_softmax_backward);
}

Tensor attention_softmax(const Tensor& scores_in, const Tensor& mask_in, float scale) {
  const Tensor scores = detail::dense(scores_in, "attention_softmax");
  const Tensor mask = mask_in.defined() ? detail::dense(mask_in, "attention_softmax") : Tensor();
  if (scores.dim() != 4)
    throw std::invalid_argument(fmt::format("[attention_softmax] scores must be (B, H, Tq, Tk), got {}",
                                            shape_str(scores.shape())));
  const size_t B = scores.size(0), H = scores.size(1), Tq = scores.size(2), Tk = scores.size(3);
  if (mask.defined() && mask.shape() != Shape{B, Tk})
    throw std::invalid_argument(fmt::format("[attention_softmax] mask has shape {}, expected [{}, {}] for scores {}",
                                            shape_str(mask.shape()), B, Tk, shape_str(scores.shape())));
  const size_t rows = B * H * Tq;
  Tensor out = Tensor::empty(scores.shape());
  const float* m = mask.defined() ? mask.data() : nullptr;
  parallel_rows(rows, Tk, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      float* y = out.data() + r * Tk;
      const float* s = scores.data() + r * Tk;
      if (m) {  // y = scale * s + mask[b], then softmax in place
        const float* mb = m + (r / (H * Tq)) * Tk;
        vec::scale(s, scale, y, Tk);
        vec::add(y, mb, y, Tk);
        if (Tk > 0 && vec::max(y, Tk) == -std::numeric_limits<float>::infinity()) {  // no key left: no weight,
          std::fill(y, y + Tk, 0.f);  // as multi_head_attention gives (a softmax of -inf everywhere is NaN)
          continue;
        }
      } else {
        vec::scale(s, scale, y, Tk);
      }
      vec::softmax(y, y, 1, Tk);
    }
  });
  const Tensor y = out.detach();
  return record("attention_softmax", out, {scores_in, mask_in}, {y}, [y, rows, Tk, scale](const Tensor& g) -> std::vector<Tensor> {
    Tensor dx = Tensor::empty(g.shape());
    parallel_rows(rows, Tk, [&](size_t r0, size_t r1) {
      vec::softmax_backward(y.data() + r0 * Tk, g.data() + r0 * Tk, dx.data() + r0 * Tk, r1 - r0, Tk);
      vec::scale(dx.data() + r0 * Tk, scale, dx.data() + r0 * Tk, (r1 - r0) * Tk);
    });
    return {dx, Tensor()};
  });
}

Tensor layer_norm(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in, float eps) {
  const Tensor x = detail::dense(x_in, "layer_norm");
  const Tensor weight = weight_in.defined() ? detail::dense(weight_in, "layer_norm") : Tensor();
  const Tensor bias = bias_in.defined() ? detail::dense(bias_in, "layer_norm") : Tensor();
  if (x.dim() == 0) throw std::invalid_argument("[layer_norm] needs at least one axis");
  const size_t cols = x.shape().back(), rows = cols ? x.numel() / cols : 0;
  for (const Tensor* p : {&weight, &bias})
    if (p->defined() && p->shape() != Shape{cols})
      throw std::invalid_argument(fmt::format("[layer_norm] {} has shape {}, expected [{}] for input {}",
                                              p == &weight ? "weight" : "bias", shape_str(p->shape()),
                                              cols, shape_str(x.shape())));
  if (!(eps > 0.f)) throw std::invalid_argument(fmt::format("[layer_norm] eps {} must be > 0", eps));
  Tensor out = Tensor::empty(x.shape());
  Tensor mean = Tensor::empty({rows}), rstd = Tensor::empty({rows});
  const float* w = weight.defined() ? weight.data() : nullptr;
  const float* b = bias.defined() ? bias.data() : nullptr;
  parallel_rows(rows, cols, [&](size_t r0, size_t r1) {
    vec::layer_norm(x.data() + r0 * cols, w, b, out.data() + r0 * cols, mean.data() + r0,
                    rstd.data() + r0, r1 - r0, cols, eps);
  });
  const Tensor X = x.detach(), Wt = weight.defined() ? weight.detach() : Tensor();
  // asked of the caller's tensors: a strided one's dense copy above does not require grad
  const bool need_w = weight_in.defined() && weight_in.requires_grad();
  const bool need_b = bias_in.defined() && bias_in.requires_grad();
  // the weight is read for x's gradient only
  return record("layer_norm", out, {x_in, weight_in, bias_in}, {X, x_in.requires_grad() ? Wt : Tensor()},
                [=](const Tensor& g) -> std::vector<Tensor> {
                  Tensor dx = Tensor::empty(X.shape());
                  // dw/db are accumulated per row chunk and summed after. The chunk count is fixed,
                  // not the thread count, so the sum's order (and the result, bit for bit) does
                  // not depend on how many threads run.
                  const size_t chunks = std::max<size_t>(1, std::min<size_t>(kLayerNormChunks, rows));
                  Tensor dw_parts = Tensor::zeros({chunks, cols}), db_parts = Tensor::zeros({chunks, cols});
                  parallel_for(chunks, [&](size_t c) {
                    const size_t r0 = c * rows / chunks, r1 = (c + 1) * rows / chunks;
                    vec::layer_norm_backward(X.data() + r0 * cols, Wt.defined() ? Wt.data() : nullptr,
                                             mean.data() + r0, rstd.data() + r0, g.data() + r0 * cols,
                                             dx.data() + r0 * cols,
                                             need_w ? dw_parts.data() + c * cols : nullptr,
                                             need_b ? db_parts.data() + c * cols : nullptr, r1 - r0,
                                             cols);
                  });
                  Tensor dw = need_w ? sum(dw_parts, {0}) : Tensor();
                  Tensor db = need_b ? sum(db_parts, {0}) : Tensor();
                  return {dx, dw, db};
                });
}

namespace {
constexpr size_t kDropoutChunk = 1 << 14;
constexpr size_t kDrawBlock = 1024;
constexpr size_t kMaxChunksTogether = 8;  // AVX-512's 64-bit lanes
static_assert(kDrawBlock % 2 == 0, "a block must not split a draw's two halves");

// out[i] = x[i] * scale where element i is kept, else 0. Element i's draw comes from chunk
// i / kDropoutChunk's own generator, seeded from `seed`: the mask is the same for any thread
// count, and the backward regenerates it from the seed alone (nothing stored). Elements 2j and
// 2j + 1 of a chunk are the low and high halves of its generator's draw j. A task draws for
// generator_lanes() chunks side by side (one SIMD lane each); the numbers are each chunk's own.
void apply_dropout_mask(uint64_t seed, const float* x, float* out, size_t n, float p, float scale) {
  const uint64_t threshold = uint64_t(double(p) * 4294967296.0);
  if (threshold > std::numeric_limits<uint32_t>::max()) return fill_in_parallel(out, n, 0.f);  // p == 1
  const size_t chunks = (n + kDropoutChunk - 1) / kDropoutChunk;
  const size_t together = std::min(generator_lanes(), kMaxChunksTogether);
  parallel_for((chunks + together - 1) / together, [&](size_t task) {
    const size_t first = task * together, count = std::min(together, chunks - first);
    Generator gens[kMaxChunksTogether];
    uint32_t bits[kMaxChunksTogether][kDrawBlock];
    uint32_t* rows[kMaxChunksTogether];
    for (size_t k = 0; k < count; ++k) {
      gens[k].seed_(seed + 0x9e3779b97f4a7c15ULL * (first + k + 1));
      rows[k] = bits[k];
    }
    // Only the tensor's last chunk is short, and it is last in its task: chunk `first` is longest.
    const auto chunk_end = [&](size_t k) { return std::min(n, (first + k + 1) * kDropoutChunk); };
    const size_t longest = chunk_end(0) - first * kDropoutChunk;
    for (size_t at = 0; at < longest; at += kDrawBlock) {
      fill_u32_side_by_side(gens, rows, count, std::min(kDrawBlock, longest - at));
      for (size_t k = 0; k < count; ++k) {
        const size_t i = (first + k) * kDropoutChunk + at, end = chunk_end(k);
        if (i < end)
          vec::dropout_apply(bits[k], uint32_t(threshold), x + i, scale, out + i, std::min(kDrawBlock, end - i));
      }
    }
  });
}
}  // namespace

Tensor dropout(const Tensor& x, float p, bool training, Generator& gen) {
  if (!(p >= 0.f && p <= 1.f))
    throw std::invalid_argument(fmt::format("[dropout] probability {} is not in [0, 1]", p));
  if (!training || p == 0.f) return x;
  const float scale = p == 1.f ? 0.f : 1.f / (1.f - p);
  const uint64_t seed = gen.next_u64();  // one draw per call; the mask follows from it
  Tensor out = Tensor::empty(x.shape());
  apply_dropout_mask(seed, detail::dense(x, "dropout").data(), out.data(), x.numel(), p, scale);
  return record("dropout", out, {x}, [seed, p, scale](const Tensor& g) -> std::vector<Tensor> {
    Tensor dx = Tensor::empty(g.shape());
    apply_dropout_mask(seed, g.data(), dx.data(), g.numel(), p, scale);
    return {dx};
  });
}

}  // namespace xg
