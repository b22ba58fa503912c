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

EnvSwitch g_fused{"XGRAD_FUSED_INFERENCE", true};

// A mask value at or below this gives its key exactly zero weight (exp underflows in fp32).
constexpr float kIgnoredKey = -1e4f;

vec::Unary unary_of(Activation a) {
  switch (a) {
    case Activation::Gelu: return vec::Unary::GeluErf;
    case Activation::GeluTanh: return vec::Unary::GeluTanh;
    case Activation::Relu: return vec::Unary::Relu;
    case Activation::Tanh: return vec::Unary::Tanh;
  }
  throw std::logic_error(fmt::format("[fused encoder] no kernel for activation {}", int(a)));
}

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
// it is read (zeroing them was 38 MB of stores per 8 x 128 base pass).
struct Buffers {
  Buffers(size_t rows, size_t hidden, size_t intermediate)
      : x(new float[rows * hidden]), normed(new float[rows * hidden]), ctx(new float[rows * hidden]),
        qkv(new float[rows * 3 * hidden]), inter(new float[rows * intermediate]) {}
  std::unique_ptr<float[]> x;       // the residual stream
  std::unique_ptr<float[]> normed;  // a LayerNorm's output (x's, or the post-LN layer's between blocks)
  std::unique_ptr<float[]> ctx, qkv, inter;
  attn::AttentionWorkspace attention;  // allocated by the first layer, reused by the others
};

void self_attention(const SelfAttention& sa, const float* in, size_t rows, const std::vector<size_t>& cu_seqlens,
                    Buffers& b) {
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
  attn::packed_self_attention(qkv, b.ctx.get(), H, cu_seqlens.data(), cu_seqlens.size() - 1, sa.num_heads, hd,
                              1.f / std::sqrt(float(hd)), b.attention);
}

// One layer on b.x, leaving its output in b.x. The output projections add into the residual
// stream in their GEMMs (beta 1), so no residual pass is left.
void encoder_layer(const FusedLayerView& v, size_t rows, const std::vector<size_t>& cu_seqlens, Buffers& b) {
  const size_t H = v.attention->query->weight.size(0), I = v.up->weight.size(0);
  const gemm::Epilogue up{param(v.up->bias), unary_of(v.act)};  // the feed-forward's first linear
  float *x = b.x.get(), *normed = b.normed.get();
  if (v.pre_layer_norm) {  // x += attn(LN(x)); x += ffn(LN(x))
    layer_norm_rows(x, *v.attention_norm, normed, rows, H);
    self_attention(*v.attention, normed, rows, cu_seqlens, b);
    add_projection(b.ctx.get(), rows, *v.attention_out, x);
    layer_norm_rows(x, *v.output_norm, normed, rows, H);
    linear_gemm(normed, rows, *v.up, up, b.inter.get(), I);
    add_projection(b.inter.get(), rows, *v.down, x);
  } else {  // normed = LN(x + attn(x)); x = LN(normed + ffn(normed))
    self_attention(*v.attention, x, rows, cu_seqlens, b);
    add_projection(b.ctx.get(), rows, *v.attention_out, x);
    layer_norm_rows(x, *v.attention_norm, normed, rows, H);
    linear_gemm(normed, rows, *v.up, up, b.inter.get(), I);
    add_projection(b.inter.get(), rows, *v.down, normed);
    layer_norm_rows(normed, *v.output_norm, x, rows, H);
  }
}

}  // namespace

bool fused_inference_enabled() { return g_fused.get(); }
void set_fused_inference(bool on) { g_fused.set(on); }

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
  return !grad_enabled() && !m.is_training() && fused_inference_enabled() && is_padding_mask(mask);
}

Tensor fused_encoder_forward(const Encoder& enc, const Tensor& x, const Tensor& mask) {
  std::vector<FusedLayerView> views;
  for (auto& l : *enc.layer) views.push_back(fused_view(*l));
  return fused_encoder_forward(views, enc.final_layer_norm.get(), x, mask);
}

Tensor fused_encoder_forward(const std::vector<FusedLayerView>& layers, const LayerNorm* final_norm, const Tensor& x_in,
                             const Tensor& mask_in) {
  const size_t H = layers.empty() ? (x_in.dim() == 3 ? x_in.size(2) : 0) : layers[0].attention->query->weight.size(1);
  if (x_in.dim() != 3 || x_in.size(2) != H)
    throw std::invalid_argument(fmt::format("[Encoder] input must be (B, T, {}), got {}", H, shape_str(x_in.shape())));
  const size_t B = x_in.size(0), T = x_in.size(1);
  const Tensor x = x_in.contiguous();
  const Tensor mask = mask_in.defined() ? mask_in.contiguous() : Tensor();
  if (mask.defined() && mask.shape() != Shape{B, T})
    throw std::invalid_argument(fmt::format("[Encoder] mask has shape {}, expected [{}, {}] for input {}",
                                            shape_str(mask.shape()), B, T, shape_str(x.shape())));
  refuse_zero_one_mask(mask);  // as additive, a 0/1 padding mask would attend to the padding only
  // Pack the attended positions, sequence after sequence.
  std::vector<size_t> positions, cu_seqlens{0};
  for (size_t b = 0; b < B; ++b) {
    for (size_t t = 0; t < T; ++t)
      if (!mask.defined() || mask.data()[b * T + t] == 0.f) positions.push_back(b * T + t);
    cu_seqlens.push_back(positions.size());
  }
  const size_t rows = positions.size();
  if (rows == 0) return Tensor::zeros({B, T, H});  // all padding: nothing to run (and no buffers to point into)
  size_t I = 0;
  for (const auto& l : layers) I = std::max(I, l.up->weight.size(0));
  Buffers buf(rows, H, I);
  for (size_t r = 0; r < rows; ++r) std::memcpy(buf.x.get() + r * H, x.data() + positions[r] * H, H * sizeof(float));
  for (const auto& l : layers) encoder_layer(l, rows, cu_seqlens, buf);
  if (final_norm) {
    layer_norm_rows(buf.x.get(), *final_norm, buf.normed.get(), rows, H);
    std::swap(buf.x, buf.normed);
  }
  Tensor out = Tensor::zeros({B, T, H});
  for (size_t r = 0; r < rows; ++r) std::memcpy(out.data() + positions[r] * H, buf.x.get() + r * H, H * sizeof(float));
  return out;
}

}  // namespace xg::nn
