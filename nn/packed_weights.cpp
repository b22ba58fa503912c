#include "nn/packed_weights.hpp"

#include "autograd/kernels/gemm.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/parallel.hpp"
#include "nn/switch.hpp"

namespace xg::nn {

struct Linear::PackedWeight {
  const float* source;  // weight's storage when packed: a replaced weight is not read through it
  Shape shape;
  MatmulPrecision precision;
  std::shared_ptr<const gemm::PackedB> b;  // op(B) = weight^T, (in, out)
};

InferenceWeights::InferenceWeights(Module& m, MatmulPrecision precision) {
  static const bool enabled = env_switch("XGRAD_PACKED_WEIGHTS");
  if (!enabled) return;
  m.apply([&](Module& sub) {
    auto* lin = dynamic_cast<Linear*>(&sub);
    if (!lin || lin->packed_weight) return;  // a Linear seen twice (shared) is packed once
    const Tensor w = lin->weight.contiguous();
    const size_t out = w.size(0), in = w.size(1);
    auto b = std::make_shared<const gemm::PackedB>(precision == MatmulPrecision::BF16
                                                       ? gemm::PackedB::bf16(true, in, out, w.data(), in)
                                                       : gemm::PackedB::fp32(true, in, out, w.data(), in));
    lin->packed_weight = std::make_shared<const Linear::PackedWeight>(
        Linear::PackedWeight{lin->weight.data(), lin->weight.shape(), precision, std::move(b)});
    linears_.push_back(lin);
  });
}

InferenceWeights::~InferenceWeights() {
  for (Linear* lin : linears_) lin->packed_weight.reset();
}

std::shared_ptr<const gemm::PackedB> packed_weight_for(const Linear& lin) {
  const std::shared_ptr<const Linear::PackedWeight> p = lin.packed_weight;
  if (!p || p->precision != matmul_precision() || p->source != lin.weight.data() || p->shape != lin.weight.shape())
    return nullptr;
  return p->b;
}

Tensor packed_linear(const Tensor& x, const gemm::PackedB& weight, const Tensor& bias) {
  const Tensor in = x.contiguous();
  const size_t cols = weight.N(), rows = in.numel() / weight.K();
  Shape shape = in.shape();
  shape.back() = cols;
  Tensor y = Tensor::empty(shape);
  gemm::sgemm_packed(false, rows, 1.f, in.data(), weight.K(), weight, 0.f, y.data(), cols);
  if (bias.defined()) {
    const Tensor b = bias.contiguous();
    parallel_range(rows, std::max<size_t>(1, 16384 / cols), [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) vec::add(y.data() + r * cols, b.data(), y.data() + r * cols, cols);
    });
  }
  return y;
}

}  // namespace xg::nn
