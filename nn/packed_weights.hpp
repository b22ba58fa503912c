#pragma once
// Weights packed once for serving. The GEMM packs its weight operand into cache-sized panels on
// every call; for a loaded checkpoint that serves many batches, InferenceWeights packs every
// Linear's weight once (for fp32, bf16 or int8 GEMMs), and the no-gradient forward passes read the
// packing: the fused encoder path, and Linear::forward while gradients are off (through the
// `linear` op's overload taking a gemm::PackedB). At 1 x 128 tokens on BERT-base's shapes,
// packing the weight was a quarter of each GEMM (bench_gemm --packed).
#include <memory>
#include <vector>

#include "autograd/precision.hpp"
#include "nn/layers.hpp"
#include "nn/transformer.hpp"

namespace xg::gemm {
class PackedB;
}

namespace xg::nn {

// Packs the weight of every Linear in `m` for GEMMs at `precision` (bf16: rounded to bf16 once,
// which at 1 x 128 on BERT-base had cost a fifth of the time on every call). The packing is a
// snapshot of a loaded checkpoint, not for training: a weight replaced by another tensor or
// changed in place in a way its version counts (copy_, an optimizer's step; not raw writes
// through data()) is read as it is now, and its packing ignored from then on. It is
// read only while the process's matmul precision is `precision`. A bf16 packing is made for the
// bf16 kernel selected when packing (gemm::bf16_kernel). It must not outlive `m`, and a Linear is
// packed by one InferenceWeights at a time (a second throws). Not thread-safe against forward
// passes running while it is made or dropped.
// A SelfAttention's query, key and value are packed together, as one (in, 3 x out) operand, so
// the fused path and SelfAttention::forward (gradients off) project Q, K and V with one GEMM
// (packed_qkv_for); they are not also packed one by one, so Linear::forward called on one of them
// alone packs its weight per call, as without an InferenceWeights.
// At int8 each Linear's weight is quantized per output channel (gemm::PackedB::int8), and the
// layer runs the int8 GEMM while the precision is INT8: the one way a model runs int8 (a Linear
// no InferenceWeights holds runs fp32 under INT8).
// Memory: one more copy of the Linear weights at fp32; at bf16 half a copy (a full one where the
// CPU lacks AVX512-BF16 and the panels hold the rounded values as fp32); at int8 a quarter.
// Dropping it frees it.
class InferenceWeights {
 public:
  InferenceWeights(Module& m, MatmulPrecision precision);
  ~InferenceWeights();
  InferenceWeights(const InferenceWeights&) = delete;
  InferenceWeights& operator=(const InferenceWeights&) = delete;

 private:
  void release();
  std::vector<Linear*> linears_;
  std::vector<SelfAttention*> attentions_;
};

// Whether a program serving `m` at `precision` packs its weights (an InferenceWeights): as its
// execution options say, and always at INT8, whose int8 weights exist only as a packing.
bool serving_packs_weights(const Module& m, MatmulPrecision precision);

// lin's packed weight when one is held for the current matmul precision and still belongs to
// lin.weight (same storage and shape); else null. A shared copy: the holder may drop its own.
std::shared_ptr<const gemm::PackedB> packed_weight_for(const Linear& lin);

// sa's query, key and value weights packed as one op(B) of (in, 3 x out): columns [0, out) the
// query's, then the key's, then the value's. Null unless held for the current matmul precision
// and all three weights are still the ones packed (same storage and shape).
std::shared_ptr<const gemm::PackedB> packed_qkv_for(const SelfAttention& sa);

}  // namespace xg::nn
