#include "nn/packed_weights.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "autograd/kernels/gemm.hpp"
#include "nn/switch.hpp"

namespace xg::nn {

struct Linear::PackedWeight {
  Tensor source;  // the weight packed; holding it keeps its storage's address from being reused
  MatmulPrecision precision;
  const InferenceWeights* owner;
  std::shared_ptr<const gemm::PackedB> b;  // op(B) = weight^T, (in, out)
};

bool packed_weights_enabled() {
  static EnvSwitch enabled{"XGRAD_PACKED_WEIGHTS", true};
  return enabled.get();
}

InferenceWeights::InferenceWeights(Module& m, MatmulPrecision precision) {
  try {
    m.apply([&](Module& sub) {
      auto* lin = dynamic_cast<Linear*>(&sub);
      if (!lin) return;
      if (lin->packed_weight) {
        if (lin->packed_weight->owner == this) return;  // a Linear seen twice (shared) is packed once
        throw std::logic_error("[InferenceWeights] a Linear is already packed by another InferenceWeights");
      }
      const Tensor w = lin->weight.contiguous();
      if (w.dtype() != Dtype::Float32)
        throw std::invalid_argument(fmt::format("[InferenceWeights] a Linear weight is {}, not float32",
                                                dtype_name(w.dtype())));
      const size_t out = w.size(0), in = w.size(1);
      auto b = std::make_shared<const gemm::PackedB>(precision == MatmulPrecision::BF16
                                                         ? gemm::PackedB::bf16(true, in, out, w.data(), in)
                                                         : gemm::PackedB::fp32(true, in, out, w.data(), in));
      lin->packed_weight = std::make_shared<const Linear::PackedWeight>(
          Linear::PackedWeight{lin->weight, precision, this, std::move(b)});
      linears_.push_back(lin);
    });
  } catch (...) {
    release();
    throw;
  }
}

InferenceWeights::~InferenceWeights() { release(); }

void InferenceWeights::release() {
  for (Linear* lin : linears_) lin->packed_weight.reset();
  linears_.clear();
}

std::shared_ptr<const gemm::PackedB> packed_weight_for(const Linear& lin) {
  const std::shared_ptr<const Linear::PackedWeight> p = lin.packed_weight;
  const Tensor& w = lin.weight;
  if (!p || p->precision != matmul_precision() || p->source.raw_data() != w.raw_data() ||
      p->source.shape() != w.shape() || p->source.strides() != w.strides() || p->source.dtype() != w.dtype())
    return nullptr;
  return p->b;
}

}  // namespace xg::nn
