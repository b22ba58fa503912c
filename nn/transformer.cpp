#include "nn/transformer.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>

#include "nn/fused_encoder.hpp"
#include "nn/packed_weights.hpp"

namespace xg::nn {

void TransformerOptions::validate() const {
  auto positive = [](size_t v, const char* name) {
    if (v == 0) throw std::invalid_argument(fmt::format("[TransformerOptions] {} must be positive", name));
  };
  positive(hidden_size, "hidden_size");
  positive(num_heads, "num_heads");
  positive(intermediate_size, "intermediate_size");
  if (hidden_size % num_heads != 0)
    throw std::invalid_argument(fmt::format(
        "[TransformerOptions] hidden_size {} is not divisible by num_heads {}", hidden_size, num_heads));
  for (auto [p, name] : {std::pair{hidden_dropout, "hidden_dropout"}, {attention_dropout, "attention_dropout"}})
    if (!(p >= 0.f && p < 1.f))
      throw std::invalid_argument(fmt::format("[TransformerOptions] {} {} is not in [0, 1)", name, p));
  if (!(layer_norm_eps > 0.f))
    throw std::invalid_argument(fmt::format("[TransformerOptions] layer_norm_eps {} must be > 0", layer_norm_eps));
}

Tensor additive_attention_mask(const Tensor& attention_mask) {
  if (attention_mask.dim() != 2)
    throw std::invalid_argument(fmt::format("[additive_attention_mask] expected (B, T), got {}",
                                            shape_str(attention_mask.shape())));
  Tensor m = Tensor::empty(attention_mask.shape());
  const float lowest = std::numeric_limits<float>::lowest();
  const std::vector<float> given = attention_mask.to_vector();  // any dtype (int64 as Hugging Face's) and strides
  for (size_t i = 0; i < m.numel(); ++i) m.data()[i] = given[i] != 0.f ? 0.f : lowest;
  return m;
}

void refuse_zero_one_mask(const Tensor& mask) {
  if (!mask.defined()) return;
  const std::vector<float> v = mask.to_vector();
  bool zeros_and_ones = true, has_one = false;
  for (float x : v) {
    zeros_and_ones = zeros_and_ones && (x == 0.f || x == 1.f);
    has_one = has_one || x == 1.f;
  }
  if (zeros_and_ones && has_one)
    throw std::invalid_argument(fmt::format(
        "[attention] the mask {} holds only 0s and 1s: a 0/1 padding mask, where an additive one (0 to attend, -inf or "
        "<= -1e4 to ignore) is expected; convert it with nn::additive_attention_mask", shape_str(mask.shape())));
}

AttentionMask::AttentionMask(const Tensor& mask) : additive(mask) { refuse_zero_one_mask(mask); }

void OutputRows::check(const Shape& x) const {
  if (x.size() != 3 || per_sequence == 0 || rows.size() != x[0] * per_sequence)
    throw std::invalid_argument(fmt::format("[OutputRows] {} rows of {} per sequence do not fit a batch of {}", rows.size(),
                                            per_sequence, shape_str(x)));
  const size_t T = x[1];
  if (T == 0 && !rows.empty())
    throw std::out_of_range(fmt::format("[OutputRows] {} rows wanted from sequences of no positions, {}", rows.size(),
                                        shape_str(x)));
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r] < 0 || size_t(rows[r]) / T != r / per_sequence)
      throw std::out_of_range(fmt::format("[OutputRows] row {} is position {}, not in sequence {} of {}", r, rows[r],
                                          r / per_sequence, shape_str(x)));
}

Tensor OutputRows::select(const Tensor& x) const {
  check(x.shape());
  const long B = long(x.size(0)), T = long(x.size(1)), H = long(x.size(2));
  return reshape(index_select(reshape(x, {B * T, H}), 0, rows), {B, long(per_sequence), H});
}

SelfAttention::SelfAttention(const TransformerOptions& opt)
    : num_heads(opt.num_heads), attention_dropout(opt.attention_dropout) {
  opt.validate();
  const size_t H = opt.hidden_size;
  query = register_module("query", std::make_shared<Linear>(H, H));
  key = register_module("key", std::make_shared<Linear>(H, H));
  value = register_module("value", std::make_shared<Linear>(H, H));
}

namespace {
// q, k, v = x's three projections: with gradients off and the three packed together
// (InferenceWeights), one GEMM on the joint packing with the three biases as one (added as each
// Linear adds its own), sliced; else one Linear each.
std::array<Tensor, 3> project_qkv(const SelfAttention& sa, const Tensor& x) {
  Linear* const layers[] = {sa.query.get(), sa.key.get(), sa.value.get()};
  const bool all_biased = layers[0]->bias.defined() && layers[1]->bias.defined() && layers[2]->bias.defined();
  const bool none_biased = !layers[0]->bias.defined() && !layers[1]->bias.defined() && !layers[2]->bias.defined();
  if (!grad_enabled() && (all_biased || none_biased))
    if (const auto packed = packed_qkv_for(sa)) {
      const Tensor bias = all_biased ? concat({layers[0]->bias, layers[1]->bias, layers[2]->bias}, 0) : Tensor();
      const Tensor qkv = linear(x, *packed, bias);
      const long H = long(sa.query->weight.size(0));
      return {slice(qkv, -1, 0, H), slice(qkv, -1, H, 2 * H), slice(qkv, -1, 2 * H, 3 * H)};
    }
  return {layers[0]->forward(x), layers[1]->forward(x), layers[2]->forward(x)};
}
}  // namespace

Tensor SelfAttention::forward(const Tensor& x, const AttentionMask& attention_mask) {
  if (attention_mask.packed) {
    if (x.dim() != 2 || x.size(1) != query->weight.size(1) || x.size(0) != attention_mask.packed->rows.size())
      throw std::invalid_argument(fmt::format("[SelfAttention] packed input must be ({}, {}), got {}",
                                              attention_mask.packed->rows.size(), query->weight.size(1),
                                              shape_str(x.shape())));
    const auto [q, k, v] = project_qkv(*this, x);
    return multi_head_attention(q, k, v, attention_mask.packed->cu_seqlens, num_heads, attention_dropout, is_training());
  }
  if (x.dim() != 3 || x.size(2) != query->weight.size(1))
    throw std::invalid_argument(fmt::format("[SelfAttention] input must be (B, T, {}), got {}",
                                            query->weight.size(1), shape_str(x.shape())));
  const Tensor& mask = attention_mask.additive;
  const auto [q, k, v] = project_qkv(*this, x);
  if (execution().flash_attention)
    return multi_head_attention(q, k, v, mask, num_heads, attention_dropout, is_training());
  return unfused_multi_head_attention(q, k, v, mask, num_heads, attention_dropout, is_training());
}

Tensor SelfAttention::forward_queries(const Tensor& xq, const Tensor& x, const Tensor& mask) {
  if (x.dim() != 3 || x.size(2) != query->weight.size(1) || xq.dim() != 3 || xq.size(0) != x.size(0) ||
      xq.size(2) != x.size(2))
    throw std::invalid_argument(fmt::format("[SelfAttention] queries {} and input {} must be (B, Tq, {}) and (B, T, {})",
                                            shape_str(xq.shape()), shape_str(x.shape()), query->weight.size(1),
                                            query->weight.size(1)));
  refuse_zero_one_mask(mask);
  const Tensor q = query->forward(xq), k = key->forward(x), v = value->forward(x);
  // The unfused weights (B, heads, Tq, T) are at most one (B, T, H) activation while heads x Tq <=
  // H, and at so few queries they measured faster than the blocked op (mini pre-training 8 x 128:
  // 2-10% a step), whose per-head copies of the keys and values do not shrink with the queries.
  if (queries_take_blocked_attention(execution(), num_heads, xq.size(1), x.size(2)))
    return multi_head_attention(q, k, v, mask, num_heads, attention_dropout, is_training());
  return unfused_multi_head_attention(q, k, v, mask, num_heads, attention_dropout, is_training());
}

void OutputRows::require_first_positions(size_t seq_len, const char* who) const {
  for (size_t r = 0; per_sequence > 0 && r < rows.size(); r += per_sequence)
    if (rows[r] != int64_t(r / per_sequence * seq_len))
      throw std::invalid_argument(fmt::format("[{}] the output rows of sequence {} start at position {}, not at its first "
                                              "token (the pooler's)", who, r / per_sequence, rows[r]));
}

OutputRows OutputRows::first_tokens(size_t batch, size_t seq_len) {
  OutputRows r;
  r.per_sequence = 1;
  for (size_t b = 0; b < batch; ++b) r.rows.push_back(int64_t(b * seq_len));
  return r;
}

bool queries_take_blocked_attention(const ExecutionOptions& exec, size_t heads, size_t queries, size_t width) {
  return exec.flash_attention && heads * queries > width;
}

bool sparse_layer_pays(const ExecutionOptions& exec, const OutputRows& rows, size_t seq_len, size_t heads, size_t hidden,
                       size_t intermediate) {
  if (exec.flash_attention) return rows.per_sequence < seq_len;
  return rows.cheaper_than_dense(seq_len, heads, hidden, intermediate);
}

RowsPath rows_path(const ExecutionOptions& exec, bool fused, const Tensor& x, const Tensor& mask, const OutputRows& rows,
                   const LastLayerShape* last) {
  if (!exec.sparse_last_layer) return RowsPath::SelectFromAll;
  if (fused) return RowsPath::FusedAtRows;  // its attention is blocked: no (T, T) weights to weigh
  if (!last || x.dim() != 3 || use_packed_rows(exec, mask) ||
      !sparse_layer_pays(exec, rows, x.size(1), last->heads, last->hidden, last->intermediate))
    return RowsPath::SelectFromAll;
  return RowsPath::SparseLastLayer;
}

bool OutputRows::cheaper_than_dense(size_t seq_len, size_t heads, size_t hidden, size_t intermediate) const {
  if (per_sequence >= seq_len) return false;
  return double(heads) * double(per_sequence) * double(seq_len) <=
         double(seq_len - per_sequence) * double(hidden + intermediate);
}

ProjectResidual::ProjectResidual(size_t in, size_t out, const TransformerOptions& opt)
    : dropout_p(opt.hidden_dropout), pre_layer_norm(opt.pre_layer_norm) {
  dense = register_module("dense", std::make_shared<Linear>(in, out));
  layer_norm = register_module("LayerNorm", std::make_shared<LayerNorm>(out, opt.layer_norm_eps));
}

Tensor ProjectResidual::forward(const Tensor& h, const Tensor& residual) {
  Tensor y = add(dropout(dense->forward(h), dropout_p, is_training()), residual);
  return pre_layer_norm ? y : layer_norm->forward(y);
}

Attention::Attention(const TransformerOptions& opt) {
  self = register_module("self", std::make_shared<SelfAttention>(opt));
  output = register_module("output", std::make_shared<ProjectResidual>(opt.hidden_size, opt.hidden_size, opt));
}

Intermediate::Intermediate(const TransformerOptions& opt) : act(opt.activation) {
  dense = register_module("dense", std::make_shared<Linear>(opt.hidden_size, opt.intermediate_size));
}

EncoderLayer::EncoderLayer(const TransformerOptions& opt) : pre_layer_norm(opt.pre_layer_norm) {
  opt.validate();
  attention = register_module("attention", std::make_shared<Attention>(opt));
  intermediate = register_module("intermediate", std::make_shared<Intermediate>(opt));
  output = register_module("output",
                           std::make_shared<ProjectResidual>(opt.intermediate_size, opt.hidden_size, opt));
}

// Pre-LN: x + attn(LN(x)), then x1 + ffn(LN(x1)), the LayerNorms before; post-LN: LN(x + attn(x)),
// then LN(x1 + ffn(x1)) (ProjectResidual's).
Tensor EncoderLayer::forward(const Tensor& x, const AttentionMask& mask) {
  const Tensor h = pre_layer_norm ? attention->output->layer_norm->forward(x) : x;
  return feed_forward(attention->output->forward(attention->self->forward(h, mask), x));
}

Tensor EncoderLayer::forward_rows(const Tensor& x, const Tensor& mask, const OutputRows& rows) {
  const Tensor h = pre_layer_norm ? attention->output->layer_norm->forward(x) : x;
  const Tensor hs = rows.select(h), xs = pre_layer_norm ? rows.select(x) : hs;
  return feed_forward(attention->output->forward(attention->self->forward_queries(hs, h, mask), xs));
}

Tensor EncoderLayer::feed_forward(const Tensor& x1) {
  return output->forward(intermediate->forward(pre_layer_norm ? output->layer_norm->forward(x1) : x1), x1);
}

Encoder::Encoder(const TransformerOptions& opt, size_t num_layers) {
  opt.validate();
  layer = register_module("layer", std::make_shared<ModuleList<EncoderLayer>>());
  for (size_t i = 0; i < num_layers; ++i) layer->push_back(std::make_shared<EncoderLayer>(opt));
  if (opt.pre_layer_norm)
    final_layer_norm = register_module("final_layer_norm",
                                       std::make_shared<LayerNorm>(opt.hidden_size, opt.layer_norm_eps));
}

Tensor Encoder::forward(const Tensor& x, const Tensor& mask) {
  if (use_fused_inference(*this, mask)) return fused_encoder_forward(*this, x, mask);
  return forward_without_padding(execution(), x, mask, [this](const Tensor& in, const AttentionMask& m) {
    Tensor h = in;
    for (auto& l : *layer) h = run_layer(*l, h, [m, lp = l.get()](const Tensor& v) { return lp->forward(v, m); });
    return final_layer_norm ? final_layer_norm->forward(h) : h;
  });
}

Tensor Encoder::forward_rows(const Tensor& x, const Tensor& mask, const OutputRows& rows) {
  LastLayerShape shape{};
  if (layer->size() > 0)
    shape = {last_layer().attention->self->num_heads, x.dim() == 3 ? x.size(2) : 0, last_layer().intermediate->dense->weight.size(0)};
  switch (rows_path(execution(), use_fused_inference(*this, mask), x, mask, rows, layer->size() > 0 ? &shape : nullptr)) {
    case RowsPath::FusedAtRows: return fused_encoder_forward(*this, x, mask, &rows);
    case RowsPath::SelectFromAll: return rows.select(forward(x, mask));
    case RowsPath::SparseLastLayer: break;
  }
  Tensor h = x;
  const AttentionMask m(mask);
  for (size_t i = 0; i + 1 < layer->size(); ++i)
    h = run_layer((*layer)[i], h, [m, lp = &(*layer)[i]](const Tensor& v) { return lp->forward(v, m); });
  EncoderLayer* last = &last_layer();
  h = run_layer(*last, h, [mask, rows, last](const Tensor& v) { return last->forward_rows(v, mask, rows); });
  return final_layer_norm ? final_layer_norm->forward(h) : h;
}

// layer_forward is kept for the recomputation: what it captures, it holds by value.
Tensor Encoder::run_layer(Module& l, const Tensor& h, const std::function<Tensor(const Tensor&)>& layer_forward) {
  if (!(checkpoint_activations && is_training() && grad_enabled())) return layer_forward(h);
  return checkpoint([layer_forward](const std::vector<Tensor>& v) { return layer_forward(v[0]); }, {h}, l.parameters());
}

PackedBatch PackedBatch::from_mask(const Tensor& mask_in) {
  const Tensor mask = mask_in.contiguous();
  if (mask.dim() != 2)
    throw std::invalid_argument(fmt::format("[PackedBatch] mask must be (B, T), got {}", shape_str(mask.shape())));
  PackedBatch p;
  p.batch = mask.size(0);
  p.seq_len = mask.size(1);
  p.cu_seqlens.push_back(0);
  for (size_t b = 0; b < p.batch; ++b) {
    for (size_t t = 0; t < p.seq_len; ++t)
      if (mask.data()[b * p.seq_len + t] == 0.f) p.rows.push_back(int64_t(b * p.seq_len + t));
    p.cu_seqlens.push_back(p.rows.size());
  }
  return p;
}

Tensor PackedBatch::pack(const Tensor& x) const {
  if (x.dim() != 3 || x.size(0) != batch || x.size(1) != seq_len)
    throw std::invalid_argument(fmt::format("[PackedBatch::pack] expected ({}, {}, H), got {}", batch, seq_len,
                                            shape_str(x.shape())));
  return index_select(reshape(x, {long(batch * seq_len), long(x.size(2))}), 0, rows);
}

Tensor PackedBatch::unpack(const Tensor& h) const {
  if (h.dim() != 2 || h.size(0) != rows.size())
    throw std::invalid_argument(fmt::format("[PackedBatch::unpack] expected ({}, H), got {}", rows.size(),
                                            shape_str(h.shape())));
  // Padded positions read an appended zero row (its gradient goes nowhere).
  const size_t N = rows.size(), H = h.size(1);
  std::vector<int64_t> source(batch * seq_len, int64_t(N));
  for (size_t r = 0; r < N; ++r) source[size_t(rows[r])] = int64_t(r);
  const Tensor with_zero = concat({h, Tensor::zeros({1, H})}, 0);
  return reshape(index_select(with_zero, 0, source), {long(batch), long(seq_len), long(H)});
}

bool use_packed_rows(const ExecutionOptions& exec, const Tensor& mask) {
  if (!mask.defined() || !exec.padding_free_active() || !is_padding_mask(mask)) return false;
  const Tensor m = mask.contiguous();
  for (size_t i = 0; i < m.numel(); ++i)
    if (m.data()[i] != 0.f) return true;
  return false;  // nothing to drop
}

Tensor forward_without_padding(const ExecutionOptions& exec, const Tensor& x, const Tensor& mask,
                               const std::function<Tensor(const Tensor&, const AttentionMask&)>& layers) {
  if (!use_packed_rows(exec, mask)) return layers(x, AttentionMask(mask));
  AttentionMask packed;
  packed.packed = std::make_shared<const PackedBatch>(PackedBatch::from_mask(mask));
  return packed.packed->unpack(layers(packed.packed->pack(x), packed));
}

}  // namespace xg::nn
