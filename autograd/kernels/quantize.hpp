#pragma once
// Dynamic int8 quantization, as ONNX Runtime's and PyTorch's dynamic quantization do it for
// linear layers (autograd/kernels/gemm_int8.cpp):
//  - weights: symmetric int8 per output channel, quantized once (gemm::PackedB::int8):
//    w ~ scale * q, q in [-127, 127];
//  - activations: asymmetric uint8 per row, quantized at run time: x ~ scale * (q - zero_point),
//    q in [0, 255], the range widened to hold 0 so that zero (padding, ReLU) is exact;
//  - products summed exactly in int32 (AVX512-VNNI's vpdpbusd multiplies uint8 by int8), then
//    dequantized with the bias and activation in the GEMM's epilogue:
//    C = act(alpha * s_row * s_col * (sum_k qa qw - zero_point * sum_k qw) + beta * C + bias).
#include <cstddef>
#include <cstdint>

namespace xg::gemm {

struct RowQuantization {
  float scale = 1.f;       // NaN when the row holds NaN or an infinity (its products come out NaN)
  int32_t zero_point = 0;  // in [0, 255]
};

// n values of x as uint8 q[i] = clamp(nearbyint(x[i] * (1 / scale)) + zero_point, 0, 255), scale =
// (max - min) / 255 over the values and 0. A row of zeros (or of values too small for 1 / scale to
// be finite, below ~1e-36) gets q zero, scale 1, zero point 0; a row with a NaN or an infinity gets
// q zero and scale NaN.
RowQuantization quantize_row_u8(const float* x, size_t n, uint8_t* q);

// n values w[i * stride] as int8 q[i] = nearbyint(w * (1 / scale)), scale = max|w| / 127 (1, q
// zero, when all are zero or below ~4e-37). Throws std::invalid_argument on a non-finite value.
float quantize_channel_s8(const float* w, size_t n, size_t stride, int8_t* q);

// C (M x N, int32) = A (M x K, uint8, row-major, row stride lda) times B^T (B: N x K int8,
// row-major, row stride ldb): every sum exact. The kernel the int8 GEMM runs, on its packing.
// K is at most 65,793 (255 x 128 x K < 2^31; PackedB::int8 has the same bound); more throws.
void igemm_u8s8(size_t M, size_t N, size_t K, const uint8_t* A, size_t lda, const int8_t* B, size_t ldb, int32_t* C,
                size_t ldc);
// The plain triple loop: the scalar twin the tests compare against.
void igemm_u8s8_reference(size_t M, size_t N, size_t K, const uint8_t* A, size_t lda, const int8_t* B, size_t ldb,
                          int32_t* C, size_t ldc);

enum class Int8Kernel { Vnni, Fallback };
// Whether this CPU (and OS) can run the AVX512-VNNI kernel.
bool int8_vnni_available();
// The path the int8 GEMM takes: Vnni where available, else the portable loop (same sums).
Int8Kernel int8_kernel();
// Forces a path (tests cover both on one machine); Vnni throws where unavailable.
void set_int8_kernel(Int8Kernel k);

}  // namespace xg::gemm
