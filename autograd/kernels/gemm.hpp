#pragma once
// Single-precision GEMM: C = alpha * op(A) * op(B) + beta * C, all row-major.
// op(A) is M x K: A is stored M x K (lda >= K), or K x M when trans_a (lda >= M).
// op(B) is K x N: B is stored K x N (ldb >= N), or N x K when trans_b (ldb >= K).
// beta == 0 ignores C's old contents (NaN included), as BLAS does.
#include <cstddef>

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

}  // namespace xg::gemm
