#include "autograd/tensor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <ostream>
#include <stdexcept>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"

namespace xg {

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

size_t shape_numel(const Shape& s) {
  size_t n = 1;
  for (size_t d : s) n *= d;
  return n;
}

static void check_defined(const std::shared_ptr<TensorImpl>& impl, const char* what) {
  if (!impl) throw std::logic_error(fmt::format("[Tensor::{}] tensor is undefined", what));
}

Tensor Tensor::empty(const Shape& shape) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Buffer>(Buffer::from_shape({shape_numel(shape)}));
  impl->shape = shape;
  return Tensor(std::move(impl));
}

Tensor Tensor::full(const Shape& shape, float value, bool requires_grad) {
  Tensor t = empty(shape);
  std::fill_n(t.data(), t.numel(), value);
  t.impl_->requires_grad = requires_grad;
  return t;
}
Tensor Tensor::zeros(const Shape& shape, bool rg) { return full(shape, 0.f, rg); }
Tensor Tensor::ones(const Shape& shape, bool rg) { return full(shape, 1.f, rg); }
Tensor Tensor::scalar(float value, bool rg) { return full({}, value, rg); }

Tensor Tensor::arange(size_t n) {
  Tensor t = empty({n});
  for (size_t i = 0; i < n; ++i) t.data()[i] = float(i);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, bool rg) {
  if (values.size() != shape_numel(shape))
    throw std::invalid_argument(fmt::format("[from_vector] {} values do not fill shape {}",
                                            values.size(), shape_str(shape)));
  Tensor t = empty(shape);
  std::copy(values.begin(), values.end(), t.data());
  t.impl_->requires_grad = rg;
  return t;
}

Tensor Tensor::from_xarray(const xt::xarray<float>& a, bool rg) {
  Tensor t = empty(Shape(a.shape().begin(), a.shape().end()));
  std::copy(a.begin(), a.end(), t.data());  // xarray iterates in row-major order
  t.impl_->requires_grad = rg;
  return t;
}

Tensor Tensor::normal(const Shape& shape, float mean, float std, Generator& gen, bool rg) {
  Tensor t = empty(shape);
  float* p = t.data();
  for (size_t i = 0, n = t.numel(); i < n; ++i) p[i] = mean + std * gen.normal();
  t.impl_->requires_grad = rg;
  return t;
}

Tensor Tensor::uniform(const Shape& shape, float low, float high, Generator& gen, bool rg) {
  Tensor t = empty(shape);
  float* p = t.data();
  for (size_t i = 0, n = t.numel(); i < n; ++i) p[i] = low + (high - low) * gen.uniform();
  t.impl_->requires_grad = rg;
  return t;
}

const Shape& Tensor::shape() const {
  check_defined(impl_, "shape");
  return impl_->shape;
}
size_t Tensor::numel() const { return shape_numel(shape()); }

size_t Tensor::size(int axis) const {
  const int d = int(dim());
  const int a = axis < 0 ? axis + d : axis;
  if (a < 0 || a >= d)
    throw std::out_of_range(
        fmt::format("[Tensor::size] axis {} out of range for shape {}", axis, shape_str(shape())));
  return shape()[size_t(a)];
}

float* Tensor::data() {
  check_defined(impl_, "data");
  return impl_->storage->data();
}
const float* Tensor::data() const {
  check_defined(impl_, "data");
  return impl_->storage->data();
}

float Tensor::item() const {
  if (numel() != 1)
    throw std::invalid_argument(
        fmt::format("[item] needs a one-element tensor, got shape {}", shape_str(shape())));
  return data()[0];
}

std::vector<float> Tensor::to_vector() const { return std::vector<float>(data(), data() + numel()); }

xt::xarray<float> Tensor::to_xarray() const {
  xt::xarray<float> a = xt::xarray<float>::from_shape(shape());
  std::copy(data(), data() + numel(), a.data());
  return a;
}

bool Tensor::requires_grad() const {
  check_defined(impl_, "requires_grad");
  return impl_->requires_grad;
}

Tensor& Tensor::requires_grad_(bool on) {
  check_defined(impl_, "requires_grad_");
  if (impl_->grad_fn)
    throw std::logic_error("[requires_grad_] only leaf tensors can change requires_grad");
  impl_->requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const {
  check_defined(impl_, "is_leaf");
  return impl_->grad_fn == nullptr;
}

Tensor Tensor::grad() const {
  check_defined(impl_, "grad");
  return Tensor(impl_->grad);
}

void Tensor::set_grad(const Tensor& g) {
  check_defined(impl_, "set_grad");
  if (g.defined() && g.shape() != shape())
    throw std::invalid_argument(fmt::format("[set_grad] gradient shape {} != tensor shape {}",
                                            shape_str(g.shape()), shape_str(shape())));
  impl_->grad = g.impl();
}

void Tensor::zero_grad() {
  check_defined(impl_, "zero_grad");
  impl_->grad.reset();
}

Tensor Tensor::detach() const {
  check_defined(impl_, "detach");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->shape = impl_->shape;
  return Tensor(std::move(impl));
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape());
  std::memcpy(t.data(), data(), numel() * sizeof(float));
  return t;
}

void Tensor::backward(bool retain_graph) const {
  if (numel() != 1)
    throw std::invalid_argument(fmt::format(
        "[backward] called without a gradient on a non-scalar tensor of shape {}; pass grad_output",
        shape_str(shape())));
  backward(Tensor::ones(shape()), retain_graph);
}

void Tensor::backward(const Tensor& grad_output, bool retain_graph) const {
  run_backward(*this, grad_output, retain_graph);
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  check_defined(impl_, "grad_fn");
  return impl_->grad_fn;
}

Tensor Tensor::reshape(const std::vector<long>& shape) const { return xg::reshape(*this, shape); }

bool Tensor::same_storage(const Tensor& other) const {
  return defined() && other.defined() && impl_->storage == other.impl_->storage;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  os << "Tensor(shape=" << shape_str(t.shape()) << ", data=[";
  const size_t n = std::min<size_t>(t.numel(), 16);
  for (size_t i = 0; i < n; ++i) os << (i ? ", " : "") << t.data()[i];
  if (t.numel() > n) os << ", ...";
  return os << "])";
}

}  // namespace xg
