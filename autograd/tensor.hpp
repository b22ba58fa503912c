#pragma once
// Tensor: an n-d view (shape, strides, offset, dtype) of a shared Storage, plus what reverse-mode
// autograd needs: requires_grad, the accumulated grad, the Node that produced it and hooks that
// fire when its gradient is final. Copies of a Tensor are handles to the same data, like
// torch.Tensor. View ops (permute, transpose, slice, expand, reshape of contiguous data) share
// storage; kernels that need packed row-major float32 data call contiguous() first, and data()
// refuses anything else, so a kernel can never read a strided view as if it were packed.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "autograd/dtype.hpp"
#include "util/random.hpp"

namespace xg {

using Shape = std::vector<size_t>;
using Strides = std::vector<int64_t>;  // in elements; 0 along broadcast (expanded) axes

// Bytes held in an xtensor uvector (uninitialised on creation, 64-byte aligned for SIMD). The
// uvector sits behind a pointer (tensor.cpp) so that this header, included nearly everywhere,
// does not bring in xtensor; autograd/tensor_xt.hpp is the xtensor interop.
struct Storage {
  explicit Storage(size_t nbytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() { return data_; }
  size_t nbytes() const { return nbytes_; }
  // Counts the in-place writes autograd must know about (Tensor::bump_version); shared by every
  // view of this storage, as PyTorch's version counter is shared by a base and its views.
  uint64_t version = 0;

 private:
  struct Bytes;
  std::unique_ptr<Bytes> bytes_;
  void* data_;     // the uvector's, cached so that data() stays inline on every op's path
  size_t nbytes_;
};

struct Node;
class Tensor;
// Called with the final gradient of a leaf once backward() will add nothing more to it.
using GradHook = std::function<void(const Tensor& grad)>;

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Dtype dtype = Dtype::Float32;
  Shape shape;
  Strides strides;
  size_t offset = 0;  // in elements
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;  // accumulated by backward() for leaves
  std::shared_ptr<Node> grad_fn;     // null for leaves and for tensors made without grad
  std::vector<GradHook> grad_hooks;  // leaves only
  // Where this leaf's gradient lives when set (a view of a flat gradient arena): backward
  // writes there instead of allocating, and grad points at it once written.
  std::shared_ptr<TensorImpl> grad_slot;
  // The slot may hold something other than zeros: set wherever a gradient goes into it or is
  // dropped (zero_grad, set_grad, ParameterArena::zero_grad), cleared by the arena when it zeroes
  // the slot. A reduce that writes a slot with no gradient leaves it unset, so this step's norm
  // still reads what it wrote; the next drop sets it. A caller that keeps the slot's view past
  // zero_grad and writes into it later bypasses it. Kept here, not in the arena, so a gradient
  // dropped by any caller (Tensor::zero_grad, an optimizer's zero_grad) still gets its slot zeroed.
  bool grad_slot_written = false;
};

std::string shape_str(const Shape& s);
size_t shape_numel(const Shape& s);
// Elements of every axis but the last: the rows of a (..., cols) tensor, also when cols is 0.
size_t leading_numel(const Shape& s);
// Row-major (C-order) strides of a shape.
Strides contiguous_strides(const Shape& s);

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (defined() == false)
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- creation ----
  static Tensor empty(const Shape& shape, Dtype dtype = Dtype::Float32);  // uninitialised
  static Tensor zeros(const Shape& shape, bool requires_grad = false);
  static Tensor ones(const Shape& shape, bool requires_grad = false);
  static Tensor full(const Shape& shape, float value, bool requires_grad = false);
  static Tensor scalar(float value, bool requires_grad = false);  // 0-d tensor
  // 0, 1, ..., n-1 as a 1-d tensor.
  static Tensor arange(size_t n);
  // Copies `values` into a tensor of `shape`; throws if the sizes differ.
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape,
                            bool requires_grad = false);
  // An int64 tensor (ids, labels, positions); throws if the sizes differ.
  static Tensor from_ints(const std::vector<int64_t>& values, const Shape& shape);
  static Tensor normal(const Shape& shape, float mean = 0.f, float std = 1.f,
                       Generator& gen = default_generator(), bool requires_grad = false);
  static Tensor uniform(const Shape& shape, float low = 0.f, float high = 1.f,
                        Generator& gen = default_generator(), bool requires_grad = false);
  // A view of `storage` (shared, not copied); throws if it would reach past the storage's end.
  static Tensor view_of(std::shared_ptr<Storage> storage, Dtype dtype, const Shape& shape,
                        const Strides& strides, size_t offset);

  // ---- inspection ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Strides& strides() const;
  size_t offset() const;
  Dtype dtype() const;
  size_t dim() const { return shape().size(); }
  size_t numel() const;
  // Size of one axis; negative axes count from the end.
  size_t size(int axis) const;
  // Row-major with no gaps (axes of size 1 may have any stride).
  bool is_contiguous() const;
  // Packed float32 data; throws if the tensor is another dtype or not contiguous.
  float* data();
  const float* data() const;
  // Packed data of type T (float, int64_t, uint16_t for the 16-bit floats); throws on a dtype
  // mismatch or a non-contiguous tensor.
  template <class T>
  T* data_as();
  template <class T>
  const T* data_as() const;
  // Address of element 0 (offset applied), for strided kernels; no contiguity check.
  void* raw_data() const;
  // The value of a one-element tensor; throws otherwise.
  float item() const;
  std::vector<float> to_vector() const;
  // Values of any dtype as int64 (int64 tensors exactly), in row-major order.
  std::vector<int64_t> to_ints() const;

  // ---- autograd ----
  bool requires_grad() const;
  // Marks a leaf as needing a gradient; throws on a non-leaf or a non-float tensor.
  Tensor& requires_grad_(bool on = true);
  bool is_leaf() const;
  // The accumulated gradient (undefined until a backward pass reaches this leaf).
  Tensor grad() const;
  void set_grad(const Tensor& g);
  // Sets the gradient to undefined (the next backward writes a fresh one, or into the leaf's
  // grad slot when it has one).
  void zero_grad();
  // Runs `hook` each time a backward pass has finished accumulating into this leaf's gradient.
  void register_grad_hook(GradHook hook);
  // Same data, cut from the graph.
  Tensor detach() const;
  // Deep copy into fresh contiguous storage (no graph).
  Tensor clone() const;
  // Reverse-mode pass from this tensor. Without an argument it must hold one element.
  void backward(bool retain_graph = false) const;
  void backward(const Tensor& grad_output, bool retain_graph = false) const;
  const std::shared_ptr<Node>& grad_fn() const;

  // Copies src's values (same shape, any dtype and strides) into this tensor's elements, in
  // place; not recorded in the graph. Bumps the version.
  void copy_(const Tensor& src);
  // The version of this tensor's storage: how many in-place writes it has had (copy_, an
  // optimizer's step, nn::init). An op that saves a tensor for its backward notes the version,
  // and the backward throws if it changed: the gradient would belong to other values. Writes
  // through data() are not counted; a caller writing that way in place calls bump_version().
  uint64_t version() const;
  void bump_version();

  // Same data with another shape (one dim may be -1); a view when contiguous, recorded.
  Tensor reshape(const std::vector<long>& shape) const;
  // This tensor if already contiguous, else a packed copy (recorded: gradients flow back).
  Tensor contiguous() const;
  // A copy in another dtype (recorded for float dtypes: the gradient is cast back); this
  // tensor itself when the dtype already matches.
  Tensor to(Dtype dtype) const;

  std::shared_ptr<TensorImpl> impl() const { return impl_; }
  bool same_storage(const Tensor& other) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace xg
