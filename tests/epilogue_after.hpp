#pragma once
// The reference for a GEMM's epilogue (gemm::Epilogue) in the GEMM tests: the same steps as passes
// after the call.
#include <cstddef>
#include <optional>
#include <vector>

#include "autograd/kernels/vec.hpp"

namespace xg {

// C (M x N, row stride ldc) = activation(C + bias) row by row: what linear() did after the GEMM
// before the bias and then the activation moved into its epilogue.
inline void epilogue_after(std::vector<float>& C, size_t M, size_t N, size_t ldc, const std::vector<float>& bias,
                           std::optional<vec::Unary> activation) {
  for (size_t i = 0; i < M; ++i) {
    for (size_t j = 0; j < N; ++j) C[i * ldc + j] += bias[j];
    if (activation) vec::unary(*activation, C.data() + i * ldc, C.data() + i * ldc, N);
  }
}

}  // namespace xg
