#pragma once
// Tensor: a float32 n-d array (row-major, always contiguous) whose data lives in an xtensor
// container, plus what reverse-mode autograd needs: requires_grad, the accumulated grad and the
// Node that produced it. Copies of a Tensor are handles to the same data, like torch.Tensor.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "util/random.hpp"
#include "autograd/xt.hpp"

namespace xg {

using Shape = std::vector<size_t>;
using Buffer = xt::xtensor<float, 1>;  // SIMD-aligned (XTENSOR_USE_XSIMD allocator)

struct Node;
struct TensorImpl {
  std::shared_ptr<Buffer> storage;
  Shape shape;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;  // accumulated by backward() for leaves
  std::shared_ptr<Node> grad_fn;     // null for leaves and for tensors made without grad
};

std::string shape_str(const Shape& s);
size_t shape_numel(const Shape& s);

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (defined() == false)
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- creation ----
  static Tensor empty(const Shape& shape);  // uninitialised
  static Tensor zeros(const Shape& shape, bool requires_grad = false);
  static Tensor ones(const Shape& shape, bool requires_grad = false);
  static Tensor full(const Shape& shape, float value, bool requires_grad = false);
  static Tensor scalar(float value, bool requires_grad = false);  // 0-d tensor
  // 0, 1, ..., n-1 as a 1-d tensor.
  static Tensor arange(size_t n);
  // Copies `values` into a tensor of `shape`; throws if the sizes differ.
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape,
                            bool requires_grad = false);
  static Tensor from_xarray(const xt::xarray<float>& a, bool requires_grad = false);
  static Tensor normal(const Shape& shape, float mean = 0.f, float std = 1.f,
                       Generator& gen = default_generator(), bool requires_grad = false);
  static Tensor uniform(const Shape& shape, float low = 0.f, float high = 1.f,
                        Generator& gen = default_generator(), bool requires_grad = false);

  // ---- inspection ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  size_t dim() const { return shape().size(); }
  size_t numel() const;
  // Size of one axis; negative axes count from the end.
  size_t size(int axis) const;
  float* data();
  const float* data() const;
  // The value of a one-element tensor; throws otherwise.
  float item() const;
  std::vector<float> to_vector() const;
  // A copy as an xt::xarray with this tensor's shape.
  xt::xarray<float> to_xarray() const;
  // A non-owning xtensor view of the data with this tensor's shape (valid while the tensor lives).
  auto view() const {
    return xt::adapt(const_cast<float*>(data()), numel(), xt::no_ownership(), shape());
  }

  // ---- autograd ----
  bool requires_grad() const;
  // Marks a leaf as needing a gradient; throws on a non-leaf.
  Tensor& requires_grad_(bool on = true);
  bool is_leaf() const;
  // The accumulated gradient (undefined until a backward pass reaches this leaf).
  Tensor grad() const;
  void set_grad(const Tensor& g);
  // Sets the gradient to undefined (the next backward writes a fresh one).
  void zero_grad();
  // Same data, cut from the graph.
  Tensor detach() const;
  // Deep copy of the data (no graph).
  Tensor clone() const;
  // Reverse-mode pass from this tensor. Without an argument it must hold one element.
  void backward(bool retain_graph = false) const;
  void backward(const Tensor& grad_output, bool retain_graph = false) const;
  const std::shared_ptr<Node>& grad_fn() const;

  // Same data with another shape (one dim may be -1); a view, recorded in the graph.
  Tensor reshape(const std::vector<long>& shape) const;

  std::shared_ptr<TensorImpl> impl() const { return impl_; }
  bool same_storage(const Tensor& other) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace xg
