#include "nn/packed_weights.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "autograd/kernels/gemm.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/parallel.hpp"
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

Tensor packed_linear(const Tensor& x, const gemm::PackedB& weight, const Tensor& bias) {
  const size_t in_features = weight.K(), cols = weight.N();
  if (x.dim() == 0 || x.shape().back() != in_features || x.dtype() != Dtype::Float32)
    throw std::invalid_argument(fmt::format("[packed_linear] input {} ({}) must be float32 ending in {}",
                                            shape_str(x.shape()), dtype_name(x.dtype()), in_features));
  if (bias.defined() && (bias.shape() != Shape{cols} || bias.dtype() != Dtype::Float32))
    throw std::invalid_argument(fmt::format("[packed_linear] bias {} must be float32 [{}]", shape_str(bias.shape()), cols));
  const Tensor in = x.contiguous();
  const size_t rows = in.numel() / in_features;
  Shape shape = in.shape();
  shape.back() = cols;
  Tensor y = Tensor::empty(shape);
  gemm::sgemm_packed(false, rows, 1.f, in.data(), in_features, weight, 0.f, y.data(), cols);
  if (bias.defined()) {
    const Tensor b = bias.contiguous();
    parallel_range(rows, std::max<size_t>(1, 16384 / cols), [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) vec::add(y.data() + r * cols, b.data(), y.data() + r * cols, cols);
    });
  }
  return y;
}

}  // namespace xg::nn
