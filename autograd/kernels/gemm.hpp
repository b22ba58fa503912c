#pragma once
// Single-precision GEMM: C = alpha * op(A) * op(B) + beta * C, all row-major.
// op(A) is M x K: A is stored M x K (lda >= K), or K x M when trans_a (lda >= M).
// op(B) is K x N: B is stored K x N (ldb >= N), or N x K when trans_b (ldb >= K).
// beta == 0 ignores C's old contents (NaN included), as BLAS does.
#include <cstddef>
#include <cstdint>

namespace xg::gemm {

// Packed, cache-blocked xsimd micro-kernel, split across num_threads() threads.
void sgemm(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha, const float* A,
           size_t lda, const float* B, size_t ldb, float beta, float* C, size_t ldc);

// `batch` independent GEMMs; matrix b of A starts at A + b * stride_a (stride 0 reuses one
// matrix for every b), likewise B and C. Batches are spread over the threads.
void sgemm_batched(bool trans_a, bool trans_b, size_t batch, size_t M, size_t N, size_t K,
                   float alpha, const float* A, size_t lda, size_t stride_a, const float* B,
                   size_t ldb, size_t stride_b, float beta, float* C, size_t ldc, size_t stride_c);

// The same with each matrix at its own element offset (strided views: batch axes of any
// strides, e.g. attention heads split out of a (B, T, H*D) activation).
void sgemm_batched_offsets(bool trans_a, bool trans_b, size_t batch, size_t M, size_t N, size_t K,
                           float alpha, const float* A, size_t lda, const size_t* offsets_a,
                           const float* B, size_t ldb, const size_t* offsets_b, float beta, float* C,
                           size_t ldc, const size_t* offsets_c);

// The plain triple loop (double accumulation): the scalar twin the tests compare against.
void sgemm_reference(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                     const float* A, size_t lda, const float* B, size_t ldb, float beta, float* C,
                     size_t ldc);

// bf16 GEMM (autograd/kernels/gemm_bf16.cpp): sgemm's signature and semantics, with op(A) and
// op(B) rounded to bf16 (round to nearest even, as float_to_bf16) and the products summed in
// fp32. On a CPU with AVX512-BF16 it runs a vdpbf16ps micro-kernel (subnormal inputs and
// products flush to zero there); elsewhere, or when forced, the fallback rounds copies of A and
// B and runs sgemm (the same math up to summation order).
void sgemm_bf16(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                const float* A, size_t lda, const float* B, size_t ldb, float beta, float* C,
                size_t ldc);
// The same with B already in bf16 (raw bit patterns, e.g. weights converted once for inference).
void sgemm_bf16(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                const float* A, size_t lda, const uint16_t* B, size_t ldb, float beta, float* C,
                size_t ldc);

enum class Bf16Kernel { Native, Fallback };
// Whether this CPU (and OS) can run the AVX512-BF16 kernel.
bool bf16_native_available();
// The path sgemm_bf16 takes. Starts from XGRAD_BF16_KERNEL: unset or "auto" (Native where
// available), "native" (throws where unavailable) or "fallback"; any other value throws.
Bf16Kernel bf16_kernel();
// Forces a path (tests cover both on one machine); Native throws where unavailable.
void set_bf16_kernel(Bf16Kernel k);

}  // namespace xg::gemm
