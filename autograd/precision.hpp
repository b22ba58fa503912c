#pragma once
// The process-wide matmul precision for inference. BF16 runs the forward GEMMs of linear() and
// of matmul()'s single-GEMM case through gemm::sgemm_bf16 (inputs rounded to bf16, fp32
// accumulation) while gradients are off (NoGradGuard); with gradients on, and for every
// backward GEMM, the math stays fp32, so training never sees it. Batched matmuls (attention
// scores and context) stay fp32.
#include <string>

namespace xg {

enum class MatmulPrecision { FP32, BF16 };

void set_matmul_precision(MatmulPrecision p);
MatmulPrecision matmul_precision();
// "fp32" or "bf16"; throws naming the text otherwise.
MatmulPrecision matmul_precision_from_name(const std::string& name);
const char* matmul_precision_name(MatmulPrecision p);

// Whether a forward GEMM issued now should use bf16: BF16 precision and gradients off.
bool bf16_forward_now();

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
