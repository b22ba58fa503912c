#include "nn/fused_encoder.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/kernels/attention.hpp"
#include "autograd/kernels/gemm.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/parallel.hpp"
#include "autograd/precision.hpp"
#include "nn/packed_weights.hpp"

namespace xg::nn {
namespace {

// A mask value at or below this gives its key exactly zero weight (exp underflows in fp32).
constexpr float kIgnoredKey = -1e4f;
// A padded position's packed row: none.
constexpr size_t kPadding = size_t(-1);

thread_local size_t t_last_output_rows = 0;  // last_fused_output_rows()

const float* param(const Tensor& t) { return t.defined() ? t.data() : nullptr; }

// Y (rows, out) = act(X (rows, in) W^T + bias) + beta Y, W stored (out, in) as Linear keeps it; Y
// has row stride ldy. The GEMM's epilogue adds the bias and applies the activation (either may be
// absent); beta 1 adds a residual stream held in Y, with no pass of its own.
void linear_gemm(const float* x, size_t rows, const Linear& lin, const gemm::Epilogue& epilogue, float* y,
                 size_t ldy, float beta = 0.f) {
  const size_t out = lin.weight.size(0), in = lin.weight.size(1);
  if (const auto packed = packed_weight_for(lin))
    gemm::sgemm_packed(false, rows, 1.f, x, in, *packed, beta, y, ldy, epilogue);
  else if (matmul_precision() == MatmulPrecision::BF16)
    gemm::sgemm_bf16(false, true, rows, out, in, 1.f, x, in, lin.weight.data(), in, beta, y, ldy, epilogue);
  else
    gemm::sgemm(false, true, rows, out, in, 1.f, x, in, lin.weight.data(), in, beta, y, ldy, epilogue);
}

// x += X W^T + bias: a projection added to the residual stream it belongs to, in its GEMM.
void add_projection(const float* in, size_t rows, const Linear& lin, float* x) {
  linear_gemm(in, rows, lin, {param(lin.bias)}, x, lin.weight.size(0), /*beta=*/1.f);
}

void layer_norm_rows(const float* x, const LayerNorm& norm, float* out, size_t rows, size_t cols) {
  parallel_rows(rows, cols, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      float mean, rstd;
      vec::layer_norm(x + r * cols, param(norm.weight), param(norm.bias), out + r * cols, &mean, &rstd, 1, cols,
                      norm.eps);
    }
  });
}

// Activations of one packed batch, reused layer after layer. Not zeroed: each is written before
// it is read (zeroing them was 38 MB of stores per 8 x 128 base pass). The buffers of a layer's
// output at a few rows (Selection) need no qkv.
struct Buffers {
  Buffers(size_t rows, size_t hidden, size_t intermediate, bool with_qkv = true)
      : x(new float[rows * hidden]), normed(new float[rows * hidden]), ctx(new float[rows * hidden]),
        qkv(with_qkv ? new float[rows * 3 * hidden] : nullptr), inter(new float[rows * intermediate]) {}
  std::unique_ptr<float[]> x;       // the residual stream
  std::unique_ptr<float[]> normed;  // a LayerNorm's output (x's, or the post-LN layer's between blocks)
  std::unique_ptr<float[]> ctx, qkv, inter;
  attn::AttentionWorkspace attention;  // allocated by the first layer, reused by the others
};

// The packed rows a layer's output is wanted at, when not all of them: the last layer of a pass
// read at a few positions (a classifier's first token, the masked positions of an MLM loss).
// Sequence s's are rows[begin[s]] .. rows[begin[s + 1] - 1]; output row i is rows[i]'s, and
// slots[i] its place in the (B, per_sequence) result.
struct Selection {
  std::vector<size_t> rows, begin{0}, slots;
};

// The context of every row of `in` (or, with `queries`, of those rows) into ctx.
void self_attention(const SelfAttention& sa, const float* in, size_t rows, const std::vector<size_t>& cu_seqlens,
                    Buffers& b, const attn::QueryRows* queries, float* ctx) {
  const size_t H = sa.query->weight.size(0), ld = 3 * H;
  if (const auto qkv = packed_qkv_for(sa)) {  // one GEMM for Q, K and V
    gemm::sgemm_packed(false, rows, 1.f, in, sa.query->weight.size(1), *qkv, 0.f, b.qkv.get(), ld);
  } else {
    // (the attention kernel adds their biases)
    linear_gemm(in, rows, *sa.query, {}, b.qkv.get(), ld);
    linear_gemm(in, rows, *sa.key, {}, b.qkv.get() + H, ld);
    linear_gemm(in, rows, *sa.value, {}, b.qkv.get() + 2 * H, ld);
  }
  const size_t hd = H / sa.num_heads;
  const attn::PackedQKV qkv{b.qkv.get(),        b.qkv.get() + H,   b.qkv.get() + 2 * H, ld,
                            param(sa.query->bias), param(sa.key->bias), param(sa.value->bias)};
  attn::packed_self_attention(qkv, ctx, H, cu_seqlens.data(), cu_seqlens.size() - 1, sa.num_heads, hd,
                              1.f / std::sqrt(float(hd)), b.attention, queries);
}

// One layer on b.x, leaving its output in b.x; or, with `selected`, its output at those rows in
// out.x (row i: selected->rows[i]'s), only those rows computed past the keys and values. The
// output projections add into the residual stream in their GEMMs (beta 1), so no residual pass
// is left.
void encoder_layer(const FusedLayerView& v, size_t rows, const std::vector<size_t>& cu_seqlens, Buffers& b,
                   const Selection* selected = nullptr, Buffers* out = nullptr) {
  const size_t H = v.attention->query->weight.size(0), I = v.up->weight.size(0);
  const gemm::Epilogue up{param(v.up->bias), v.act};  // the feed-forward's first linear
  if (v.pre_layer_norm) layer_norm_rows(b.x.get(), *v.attention_norm, b.normed.get(), rows, H);
  const float* attention_in = v.pre_layer_norm ? b.normed.get() : b.x.get();
  Buffers& o = selected ? *out : b;
  const size_t n = selected ? selected->rows.size() : rows;
  const attn::QueryRows queries{selected ? selected->rows.data() : nullptr, selected ? selected->begin.data() : nullptr};
  self_attention(*v.attention, attention_in, rows, cu_seqlens, b, selected ? &queries : nullptr, o.ctx.get());
  for (size_t i = 0; selected && i < n; ++i)  // the residual stream at those rows
    std::memcpy(o.x.get() + i * H, b.x.get() + selected->rows[i] * H, H * sizeof(float));
  float *x = o.x.get(), *normed = o.normed.get();
  add_projection(o.ctx.get(), n, *v.attention_out, x);
  if (v.pre_layer_norm) {  // x += attn(LN(x)); x += ffn(LN(x))
    layer_norm_rows(x, *v.output_norm, normed, n, H);
    linear_gemm(normed, n, *v.up, up, o.inter.get(), I);
    add_projection(o.inter.get(), n, *v.down, x);
  } else {  // normed = LN(x + attn(x)); x = LN(normed + ffn(normed))
    layer_norm_rows(x, *v.attention_norm, normed, n, H);
    linear_gemm(normed, n, *v.up, up, o.inter.get(), I);
    add_projection(o.inter.get(), n, *v.down, normed);
    layer_norm_rows(normed, *v.output_norm, x, n, H);
  }
}

// `wanted`'s rows that are attended positions (packed[b * T + t]: (b, t)'s packed row, or
// kPadding), grouped by sequence. Wanted rows at padding are left out: their output is zero, as
// forward's is there.
Selection select_packed_rows(const OutputRows& wanted, const std::vector<size_t>& packed, size_t batch) {
  Selection s;
  for (size_t b = 0; b < batch; ++b) {
    for (size_t r = b * wanted.per_sequence; r < (b + 1) * wanted.per_sequence; ++r) {
      const size_t row = packed[size_t(wanted.rows[r])];
      if (row == kPadding) continue;
      s.rows.push_back(row);
      s.slots.push_back(r);
    }
    s.begin.push_back(s.rows.size());
  }
  return s;
}

}  // namespace

size_t last_fused_output_rows() { return t_last_output_rows; }

bool is_padding_mask(const Tensor& mask) {
  if (!mask.defined()) return true;
  if (mask.dim() != 2 || mask.dtype() != Dtype::Float32) return false;  // the recorded path's checks name it
  const Tensor m = mask.contiguous();
  const float* p = m.data();
  for (size_t i = 0; i < m.numel(); ++i)
    if (!(p[i] == 0.f || p[i] <= kIgnoredKey)) return false;
  return true;
}

FusedLayerView fused_view(const EncoderLayer& layer) {
  FusedLayerView v;
  v.attention = layer.attention->self.get();
  v.attention_out = layer.attention->output->dense.get();
  v.attention_norm = layer.attention->output->layer_norm.get();
  v.up = layer.intermediate->dense.get();
  v.act = layer.intermediate->act;
  v.down = layer.output->dense.get();
  v.output_norm = layer.output->layer_norm.get();
  v.pre_layer_norm = layer.pre_layer_norm;
  return v;
}

bool use_fused_inference(const Module& m, const Tensor& mask) {
  return !grad_enabled() && !m.is_training() && m.execution().fused_inference && is_padding_mask(mask);
}

Tensor fused_encoder_forward(const Encoder& enc, const Tensor& x, const Tensor& mask, const OutputRows* wanted) {
  std::vector<FusedLayerView> views;
  for (auto& l : *enc.layer) views.push_back(fused_view(*l));
  return fused_encoder_forward(views, enc.final_layer_norm.get(), x, mask, wanted);
}

Tensor fused_encoder_forward(const std::vector<FusedLayerView>& layers, const LayerNorm* final_norm, const Tensor& x_in,
                             const Tensor& mask_in, const OutputRows* wanted) {
  const size_t H = layers.empty() ? (x_in.dim() == 3 ? x_in.size(2) : 0) : layers[0].attention->query->weight.size(1);
  t_last_output_rows = 0;
  if (x_in.dim() != 3 || x_in.size(2) != H)
    throw std::invalid_argument(fmt::format("[Encoder] input must be (B, T, {}), got {}", H, shape_str(x_in.shape())));
  const size_t B = x_in.size(0), T = x_in.size(1);
  const Tensor x = x_in.contiguous();
  const Tensor mask = mask_in.defined() ? mask_in.contiguous() : Tensor();
  if (mask.defined() && mask.shape() != Shape{B, T})
    throw std::invalid_argument(fmt::format("[Encoder] mask has shape {}, expected [{}, {}] for input {}",
                                            shape_str(mask.shape()), B, T, shape_str(x.shape())));
  refuse_zero_one_mask(mask);  // as additive, a 0/1 padding mask would attend to the padding only
  if (wanted) wanted->check(x.shape());
  if (wanted && layers.empty()) return wanted->select(fused_encoder_forward(layers, final_norm, x, mask));
  // Pack the attended positions, sequence after sequence.
  std::vector<size_t> positions, cu_seqlens{0}, packed(B * T, kPadding);
  for (size_t b = 0; b < B; ++b) {
    for (size_t t = 0; t < T; ++t)
      if (!mask.defined() || mask.data()[b * T + t] == 0.f) {
        packed[b * T + t] = positions.size();
        positions.push_back(b * T + t);
      }
    cu_seqlens.push_back(positions.size());
  }
  const size_t rows = positions.size();
  const Selection selected = wanted ? select_packed_rows(*wanted, packed, B) : Selection();
  const std::vector<size_t>& slots = selected.slots;  // the output's (B, per_sequence) rows that are computed
  Tensor out = wanted ? Tensor::zeros({B, wanted->per_sequence, H}) : Tensor::zeros({B, T, H});
  if (rows == 0 || (wanted && slots.empty())) return out;  // all padding: nothing to run (and no buffers to point into)
  size_t I = 0;
  for (const auto& l : layers) I = std::max(I, l.up->weight.size(0));
  Buffers buf(rows, H, I);
  for (size_t r = 0; r < rows; ++r) std::memcpy(buf.x.get() + r * H, x.data() + positions[r] * H, H * sizeof(float));
  const size_t dense_layers = layers.size() - (wanted ? 1 : 0);
  for (size_t i = 0; i < dense_layers; ++i) encoder_layer(layers[i], rows, cu_seqlens, buf);
  std::unique_ptr<Buffers> at_rows;  // the last layer's output at the wanted rows
  if (wanted) {
    at_rows = std::make_unique<Buffers>(slots.size(), H, I, /*with_qkv=*/false);
    encoder_layer(layers.back(), rows, cu_seqlens, buf, &selected, at_rows.get());
  }
  Buffers& result = wanted ? *at_rows : buf;
  const size_t n = wanted ? slots.size() : rows;
  t_last_output_rows = layers.empty() ? 0 : n;
  if (final_norm) {
    layer_norm_rows(result.x.get(), *final_norm, result.normed.get(), n, H);
    std::swap(result.x, result.normed);
  }
  for (size_t r = 0; r < n; ++r)
    std::memcpy(out.data() + (wanted ? slots[r] : positions[r]) * H, result.x.get() + r * H, H * sizeof(float));
  return out;
}

}  // namespace xg::nn
