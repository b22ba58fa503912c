#pragma once
// The process-wide matmul precision. BF16 runs GEMMs through gemm::sgemm_bf16 (inputs rounded
// to bf16, fp32 accumulation), as PyTorch's CPU autocast to bf16 does for linear layers:
//  - linear(): its forward GEMM and, with gradients on, both backward GEMMs (grad input =
//    grad_out W, grad weight = grad_out^T X), as chosen when the forward ran. Weights, gradients
//    and optimizer state stay fp32 (master weights): only the GEMMs' operands are rounded.
//  - matmul()'s single-GEMM case: the forward only, with gradients off (inference). With
//    gradients on it stays fp32, its backward too.
// Batched matmuls (attention scores and context), softmax, LayerNorm, GELU and the losses stay
// fp32 at every setting.
// INT8 is for inference only: the linear layers whose weights an nn::InferenceWeights quantized
// (gemm::PackedB::int8: int8 per output channel, activations uint8 per row at run time, int32
// sums) run the int8 GEMM; every other GEMM, and anything with gradients, runs fp32.
#include <string>

namespace xg {

enum class MatmulPrecision { FP32, BF16, INT8 };

void set_matmul_precision(MatmulPrecision p);
MatmulPrecision matmul_precision();
// "fp32", "bf16" or "int8"; throws naming the text otherwise.
MatmulPrecision matmul_precision_from_name(const std::string& name);
const char* matmul_precision_name(MatmulPrecision p);

// Whether matmul()'s forward GEMM issued now should use bf16: BF16 precision and gradients off.
bool bf16_forward_now();
// Whether a linear() issued now runs its GEMMs (forward, and backward later) in bf16: BF16.
bool bf16_linear_now();

// For checkpoint()'s first forward: it runs without gradients but must compute what its
// recompute (with gradients) will, so within this scope matmul() takes its with-gradient precision.
class GradPrecisionGuard {
 public:
  GradPrecisionGuard();
  ~GradPrecisionGuard();
  GradPrecisionGuard(const GradPrecisionGuard&) = delete;
  GradPrecisionGuard& operator=(const GradPrecisionGuard&) = delete;
};

// Sets a precision for a scope, restoring the previous one on exit.
class MatmulPrecisionGuard {
 public:
  explicit MatmulPrecisionGuard(MatmulPrecision p);
  ~MatmulPrecisionGuard();
  MatmulPrecisionGuard(const MatmulPrecisionGuard&) = delete;
  MatmulPrecisionGuard& operator=(const MatmulPrecisionGuard&) = delete;

 private:
  MatmulPrecision previous_;
};

}  // namespace xg
