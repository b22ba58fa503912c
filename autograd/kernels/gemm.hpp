#pragma once
// Single-precision GEMM: C = alpha * op(A) * op(B) + beta * C, all row-major.
// op(A) is M x K: A is stored M x K (lda >= K), or K x M when trans_a (lda >= M).
// op(B) is K x N: B is stored K x N (ldb >= N), or N x K when trans_b (ldb >= K).
// beta == 0 ignores C's old contents (NaN included), as BLAS does.
// An Epilogue finishes C in the GEMM's own pass over it (a linear layer's bias and activation).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "autograd/kernels/vec.hpp"

namespace xg::gemm {

// What a GEMM does to C after its last K block: C = activation(alpha * op(A) op(B) + beta * C +
// bias). The bits are those of the same steps as passes after the call (the bias added to every
// row, then vec::unary along each row), without those passes over C: the bias goes in with the
// micro-kernel's stores, the activation runs over each block of rows once its tiles are stored,
// while the block is still in L1/L2.
struct Epilogue {
  Epilogue() = default;
  // A bias alone converts implicitly: sgemm(..., C, ldc, bias) reads as it did before epilogues.
  Epilogue(const float* bias, std::optional<vec::Unary> activation = std::nullopt)  // NOLINT
      : bias(bias), activation(activation) {}

  const float* bias = nullptr;            // N floats (not inside C), or null
  std::optional<vec::Unary> activation;   // or none
};

// Packed, cache-blocked xsimd micro-kernel, split across num_threads() threads.
void sgemm(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha, const float* A,
           size_t lda, const float* B, size_t ldb, float beta, float* C, size_t ldc,
           const Epilogue& epilogue = {});

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
// fp32. On a CPU with AVX512-BF16 it runs a vdpbf16ps micro-kernel (subnormal inputs, products,
// partial sums and results flush to zero there, and each pair's odd k is added before its even
// one); elsewhere, or when forced, the fallback runs sgemm's kernel on panels of A and B rounded
// to bf16 as they are packed (the same math up to summation order).
void sgemm_bf16(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                const float* A, size_t lda, const float* B, size_t ldb, float beta, float* C,
                size_t ldc, const Epilogue& epilogue = {});
// The same with B already in bf16 (raw bit patterns, e.g. weights converted once for inference).
void sgemm_bf16(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                const float* A, size_t lda, const uint16_t* B, size_t ldb, float beta, float* C,
                size_t ldc);

// op(B), a K x N operand that many GEMMs reuse (inference weights), packed once into the panels
// the GEMM would otherwise pack from B on every call: at M = 128 on BERT-base's feed-forward
// shape that packing was 28% of a call. B is given as for sgemm (trans_b: stored N x K).
class PackedB {
 public:
  // For sgemm_packed to compute sgemm's result.
  static PackedB fp32(bool trans_b, size_t K, size_t N, const float* B, size_t ldb);
  // For sgemm_bf16's result: B rounded to bf16, packed for the bf16 kernel selected now (bf16
  // pairs for the AVX512-BF16 kernel; for the fallback, fp32 panels of the rounded values).
  static PackedB bf16(bool trans_b, size_t K, size_t N, const float* B, size_t ldb);
  // For the int8 GEMM (autograd/kernels/quantize.hpp): each of the N columns of op(B) (an output
  // channel) quantized to symmetric int8 with its own scale, packed for the int8 kernel, with its
  // scale and the sum of its int8 values. sgemm_packed then quantizes each row of A to uint8 as it
  // runs: an approximation of sgemm's result (dynamic quantization), not its bits. Throws
  // std::invalid_argument naming the column on a non-finite value.
  static PackedB int8(bool trans_b, size_t K, size_t N, const float* B, size_t ldb);

  size_t K() const { return K_; }
  size_t N() const { return N_; }
  bool is_bf16() const { return kind_ == Kind::Bf16Pairs || kind_ == Kind::Bf16Rounded; }
  bool is_int8() const { return kind_ == Kind::Int8; }
  size_t bytes() const { return words_ * 4; }

 private:
  enum class Kind { Fp32, Bf16Pairs, Bf16Rounded, Int8 };  // Bf16Rounded: fp32 panels of rounded values
  struct Free {
    void operator()(void* p) const;
  };
  PackedB(Kind kind, size_t K, size_t N, size_t words);
  float* floats() const { return reinterpret_cast<float*>(data_.get()); }
  friend void sgemm_packed(bool, size_t, float, const float*, size_t, const PackedB&, float, float*, size_t,
                           const Epilogue&);

  Kind kind_;
  size_t K_, N_, words_;  // words_: 32-bit panel elements (a float, a bf16 pair, or 4 int8 values)
  std::unique_ptr<uint32_t[], Free> data_;  // 64-byte aligned
};

// C (M x N) = alpha * op(A) * B + beta * C for a packed B: sgemm's result for PackedB::fp32,
// sgemm_bf16's for PackedB::bf16, the dynamically quantized product for PackedB::int8.
void sgemm_packed(bool trans_a, size_t M, float alpha, const float* A, size_t lda, const PackedB& B,
                  float beta, float* C, size_t ldc, const Epilogue& epilogue = {});

enum class Bf16Kernel { Native, Fallback };
// Whether this CPU (and OS) can run the AVX512-BF16 kernel.
bool bf16_native_available();
// The path sgemm_bf16 takes. Starts from XGRAD_BF16_KERNEL: unset or "auto" (Native where
// available), "native" (throws where unavailable) or "fallback"; any other value throws.
Bf16Kernel bf16_kernel();
// Forces a path (tests cover both on one machine); Native throws where unavailable.
void set_bf16_kernel(Bf16Kernel k);

}  // namespace xg::gemm
