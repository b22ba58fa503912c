#include "nn/packed_weights.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "autograd/engine.hpp"
#include "autograd/kernels/gemm.hpp"
#include "autograd/ops.hpp"

namespace xg::nn {

// A weight as it was packed: holding it keeps its storage's address from being reused, and its
// version tells whether it was changed in place since (copy_, an optimizer's step).
struct PackedSource {
  Tensor tensor;
  uint64_t version;
  explicit PackedSource(const Tensor& t) : tensor(t), version(t.version()) {}
  // Whether `now` is still the tensor packed, with the values packed.
  bool matches(const Tensor& now) const {
    return tensor.raw_data() == now.raw_data() && tensor.shape() == now.shape() && tensor.strides() == now.strides() &&
           tensor.dtype() == now.dtype() && now.version() == version;
  }
};

struct Linear::PackedWeight {
  PackedSource source;
  MatmulPrecision precision;
  const InferenceWeights* owner;
  std::shared_ptr<const gemm::PackedB> b;  // op(B) = weight^T, (in, out); null: packed with its SelfAttention's others
};

struct SelfAttention::PackedQkvWeight {
  PackedSource query, key, value;
  MatmulPrecision precision;
  const InferenceWeights* owner;
  std::shared_ptr<const gemm::PackedB> b;  // op(B) = [Wq; Wk; Wv]^T, (in, 3 x out)
};

namespace {

// `w` (out, in) as a contiguous float32 matrix, or an error naming it.
Tensor float_weight(const Tensor& w) {
  if (w.dtype() != Dtype::Float32)
    throw std::invalid_argument(fmt::format("[InferenceWeights] a Linear weight is {}, not float32", dtype_name(w.dtype())));
  return w.contiguous();
}

// op(B) = w^T for rows (out) x in stored row-major: the GEMM operand of y = x w^T.
std::shared_ptr<const gemm::PackedB> pack_transposed(const float* w, size_t out, size_t in, MatmulPrecision precision) {
  switch (precision) {
    case MatmulPrecision::BF16: return std::make_shared<const gemm::PackedB>(gemm::PackedB::bf16(true, in, out, w, in));
    case MatmulPrecision::INT8: return std::make_shared<const gemm::PackedB>(gemm::PackedB::int8(true, in, out, w, in));
    default: return std::make_shared<const gemm::PackedB>(gemm::PackedB::fp32(true, in, out, w, in));
  }
}

}  // namespace

InferenceWeights::InferenceWeights(Module& m, MatmulPrecision precision) {
  try {
    m.apply([&](Module& sub) {
      auto* sa = dynamic_cast<SelfAttention*>(&sub);
      if (!sa || !sa->query || !sa->key || !sa->value) return;
      if (sa->packed_qkv) {
        if (sa->packed_qkv->owner == this) return;  // a shared layer is packed once
        throw std::logic_error("[InferenceWeights] a SelfAttention is already packed by another InferenceWeights");
      }
      for (const Linear* lin : {sa->query.get(), sa->key.get(), sa->value.get()})
        if (lin->packed_weight && lin->packed_weight->owner != this)
          throw std::logic_error("[InferenceWeights] a Linear is already packed by another InferenceWeights");
      const Tensor q = float_weight(sa->query->weight), k = float_weight(sa->key->weight),
                   v = float_weight(sa->value->weight);
      if (q.dim() != 2 || k.shape() != q.shape() || v.shape() != q.shape()) return;  // not one GEMM's shape
      NoGradGuard no_grad;
      const Tensor stacked = concat({q, k, v}, 0);  // [Wq; Wk; Wv], (3 x out, in)
      auto packed = std::make_shared<const SelfAttention::PackedQkvWeight>(SelfAttention::PackedQkvWeight{
          PackedSource(sa->query->weight), PackedSource(sa->key->weight), PackedSource(sa->value->weight), precision, this,
          pack_transposed(stacked.data(), stacked.size(0), stacked.size(1), precision)});
      attentions_.push_back(sa);  // first: release() then resets whatever was set
      sa->packed_qkv = std::move(packed);
      // The three Linears are marked as held by this one (no packing of their own: they read
      // none), so the pass below skips them and another InferenceWeights on one alone is refused.
      for (Linear* lin : {sa->query.get(), sa->key.get(), sa->value.get()}) {
        if (lin->packed_weight) continue;  // a shared Linear already marked
        linears_.push_back(lin);
        lin->packed_weight = std::make_shared<const Linear::PackedWeight>(Linear::PackedWeight{PackedSource(lin->weight), precision, this, nullptr});
      }
    });
    m.apply([&](Module& sub) {
      auto* lin = dynamic_cast<Linear*>(&sub);
      if (!lin) return;
      if (lin->packed_weight) {
        if (lin->packed_weight->owner == this) return;  // seen twice (shared), or packed with its Q, K, V
        throw std::logic_error("[InferenceWeights] a Linear is already packed by another InferenceWeights");
      }
      const Tensor w = float_weight(lin->weight);
      auto packed = std::make_shared<const Linear::PackedWeight>(
          Linear::PackedWeight{PackedSource(lin->weight), precision, this, pack_transposed(w.data(), w.size(0), w.size(1), precision)});
      linears_.push_back(lin);  // first: release() then resets whatever was set
      lin->packed_weight = std::move(packed);
    });
  } catch (...) {
    release();
    throw;
  }
}

InferenceWeights::~InferenceWeights() { release(); }

void InferenceWeights::release() {
  for (Linear* lin : linears_) lin->packed_weight.reset();
  for (SelfAttention* sa : attentions_) sa->packed_qkv.reset();
  linears_.clear();
  attentions_.clear();
}

bool serving_packs_weights(const Module& m, MatmulPrecision precision) {
  return m.execution().packed_weights || precision == MatmulPrecision::INT8;
}

std::shared_ptr<const gemm::PackedB> packed_weight_for(const Linear& lin) {
  const std::shared_ptr<const Linear::PackedWeight> p = lin.packed_weight;
  if (!p || p->precision != matmul_precision() || !p->source.matches(lin.weight)) return nullptr;
  return p->b;
}

std::shared_ptr<const gemm::PackedB> packed_qkv_for(const SelfAttention& sa) {
  const std::shared_ptr<const SelfAttention::PackedQkvWeight> p = sa.packed_qkv;
  if (!p || p->precision != matmul_precision() || !p->query.matches(sa.query->weight) ||
      !p->key.matches(sa.key->weight) || !p->value.matches(sa.value->weight))
    return nullptr;
  return p->b;
}

}  // namespace xg::nn
