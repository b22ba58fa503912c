#pragma once
// Element-wise, reduction, softmax, layer_norm and GELU kernels on raw contiguous float buffers.
// Each kernel in xg::vec (xsimd batches) has a plain scalar twin of the same signature in
// xg::vec::scalar; the tests compare the two on awkward sizes. Outputs may alias inputs.
#include <cstddef>
#include <cstdint>

namespace xg::vec {

// The kernels of binary_ops.def and unary_ops.def, by name.
enum class Binary {
#define XG_BINARY(name) name,
#include "autograd/kernels/binary_ops.def"
#undef XG_BINARY
};
enum class Unary {
#define XG_UNARY(name, ...) name,
#include "autograd/kernels/unary_ops.def"
#undef XG_UNARY
};

// What a unary kernel's backward reads: its input x or its output y.
enum class GradFrom { Input, Output };
// Per unary_ops.def: whether unary_backward has a kernel for `op`, what it reads, the op's name.
bool has_backward_kernel(Unary op);
GradFrom backward_reads(Unary op);
const char* op_name(Unary op);

// The constants of one Adam step (optim::Adam works them out once per step).
struct AdamStep {
  float beta1, beta2, eps;
  float step_size;     // lr / (1 - beta1^t)
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
  float l2;            // Adam's weight decay, added to the gradient as l2 * w; else 0
  float keep;          // AdamW's decoupled decay, w *= keep (1 - lr * wd) before the step; else 1
};

// One LAMB step's constants (You et al. 2020; the update direction before the trust ratio).
struct LambStep {
  float beta1, beta2, eps;
  float inv_bc1;       // 1 / (1 - beta1^t), or 1 without bias correction
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t), or 1
  float weight_decay;  // added to the direction as weight_decay * w
};

#define XG_VEC_KERNELS                                                                          \
  /* out[i] = a[i*sa] (op) b[i*sb], with sa, sb in {0, 1} (0 broadcasts one value) */            \
  void binary(Binary op, const float* a, size_t sa, const float* b, size_t sb, float* out,       \
              size_t n);                                                                        \
  void add(const float* a, const float* b, float* out, size_t n);                               \
  /* y[i] += alpha * x[i] */                                                                    \
  void axpy(float alpha, const float* x, float* y, size_t n);                                   \
  void scale(const float* x, float alpha, float* out, size_t n);                                \
  /* dropout: out[i] = bits[i] >= threshold ? x[i] * scale : 0 */                               \
  void dropout_apply(const uint32_t* bits, uint32_t threshold, const float* x, float scale,     \
                     float* out, size_t n);                                                     \
  void unary(Unary op, const float* x, float* out, size_t n);                                   \
  void pow_scalar(const float* x, float p, float* out, size_t n);                               \
  /* dx = g * f'(x) for relu and the two GELUs (from x); tanh and sigmoid take y = f(x) */      \
  void unary_backward(Unary op, const float* x_or_y, const float* g, float* dx, size_t n);      \
  float sum(const float* x, size_t n);                                                          \
  float max(const float* x, size_t n);                                                          \
  /* rows x cols, row-major; softmax along each row */                                           \
  void softmax(const float* x, float* y, size_t rows, size_t cols);                             \
  void softmax_backward(const float* y, const float* g, float* dx, size_t rows, size_t cols);   \
  void log_softmax(const float* x, float* y, size_t rows, size_t cols);                         \
  void log_softmax_backward(const float* y, const float* g, float* dx, size_t rows,             \
                            size_t cols);                                                       \
  /* log(sum(exp(x[i]))) of one row, as log_softmax works it out (max, then a sum of exps) */   \
  float log_sum_exp(const float* x, size_t n);                                                  \
  /* sum(x[i] - shift) in double: float lanes of 32 vectors at a time, then into the double */   \
  double sum_shifted(const float* x, float shift, size_t n);                                    \
  /* One row of a cross-entropy gradient from the logits x and their log_sum_exp lse:           \
     dx[i] = (exp(x[i] - lse) - smooth - (i == target ? target_sub : 0)) * g */                 \
  void cross_entropy_grad(const float* x, float lse, float smooth, size_t target,              \
                          float target_sub, float g, float* dx, size_t n);                      \
  /* x is (rows, cols); w, b are (cols) or null; mean, rstd are (rows), written for backward */ \
  void layer_norm(const float* x, const float* w, const float* b, float* y, float* mean,        \
                  float* rstd, size_t rows, size_t cols, float eps);                            \
  /* dx (rows, cols) is written; dw, db (cols) are accumulated into when not null */            \
  void layer_norm_backward(const float* x, const float* w, const float* mean, const float* rstd, \
                           const float* g, float* dx, float* dw, float* db, size_t rows,        \
                           size_t cols);                                                        \
  /* One Adam step over n weights w, gradients g, moments m and v (updated in place). Every    \
     element gets the same operations wherever a call's range starts or ends. */                \
  void adam(const AdamStep& c, float* w, const float* g, float* m, float* v, size_t n);          \
  /* LAMB's moments (m, v in place) and direction r = (m / bc1) / (sqrt(v / bc2) + eps) + wd w   \
     of n weights; sums[0] += sum w^2, sums[1] += sum r^2 (float lanes per 1K, then double). */ \
  void lamb_direction(const LambStep& c, const float* w, const float* g, float* m, float* v,    \
                      float* r, size_t n, double sums[2]);

XG_VEC_KERNELS
namespace scalar {
XG_VEC_KERNELS
}
#undef XG_VEC_KERNELS

}  // namespace xg::vec
