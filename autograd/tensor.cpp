#include "autograd/tensor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <ostream>
#include <stdexcept>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops/broadcast.hpp"
#include "autograd/xt.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace xg {

struct Storage::Bytes {
  xt::uvector<uint8_t, xsimd::aligned_allocator<uint8_t, 64>> v;
};

Storage::Storage(size_t nbytes) : bytes_(new Bytes{decltype(Bytes::v)(nbytes)}), data_(bytes_->v.data()), nbytes_(nbytes) {}
Storage::~Storage() = default;

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

size_t shape_numel(const Shape& s) {
  if (std::find(s.begin(), s.end(), size_t(0)) != s.end()) return 0;
  size_t n = 1;
  for (size_t d : s) {
    // a product past 2^64 would wrap to a small size, and a tensor would be allocated too small
    if (n > SIZE_MAX / d) throw std::runtime_error(fmt::format("shape {} has more elements than memory can hold", shape_str(s)));
    n *= d;
  }
  return n;
}

size_t leading_numel(const Shape& s) { return s.empty() ? 1 : shape_numel(Shape(s.begin(), s.end() - 1)); }

Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= int64_t(s[i]);
  }
  return st;
}

static void check_defined(const std::shared_ptr<TensorImpl>& impl, const char* what) {
  if (!impl) throw std::logic_error(fmt::format("[Tensor::{}] tensor is undefined", what));
}

namespace {
// Training and inference free and allocate the same activation sizes every step. glibc hands
// blocks above its mmap threshold back to the OS on free and trims the heap's top, so each step
// page-faults that memory in again, zeroed (11% of a mini forward pass on one core). A fixed
// threshold at glibc's 64-bit maximum (32 MB) and no trimming keep freed blocks for reuse: in
// interleaved runs mini training on one core went 1.2-1.5x faster, peak memory +4%. The setting is
// process-wide (the program linking xgrad inherits it) and the heap no longer shrinks; it is made
// on the first tensor allocation. XGRAD_MALLOC_DEFAULTS=1 leaves glibc's settings alone, as does any
// GLIBC_TUNABLES the user set.
bool keep_freed_memory() {
#if defined(__GLIBC__)
  const char* defaults = std::getenv("XGRAD_MALLOC_DEFAULTS");
  if ((defaults && std::string(defaults) != "0") || std::getenv("GLIBC_TUNABLES")) return false;
  return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
#else
  return false;
#endif
}
}  // namespace

Tensor Tensor::empty(const Shape& shape, Dtype dtype) {
  static const bool tuned = keep_freed_memory();
  (void)tuned;
  auto impl = std::make_shared<TensorImpl>();
  const size_t numel = shape_numel(shape);
  if (numel > SIZE_MAX / 16)  // no dtype is wider than 16 bytes: the byte count cannot wrap either
    throw std::runtime_error(fmt::format("shape {} has more elements than memory can hold", shape_str(shape)));
  try {
    impl->storage = std::make_shared<Storage>(numel * dtype_size(dtype));
  } catch (const std::bad_alloc&) {
    throw std::runtime_error(fmt::format("cannot allocate a tensor of shape {} ({:.3g} GB)", shape_str(shape),
                                         double(numel) * double(dtype_size(dtype)) / 1e9));
  }
  impl->dtype = dtype;
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  return Tensor(std::move(impl));
}

Tensor Tensor::view_of(std::shared_ptr<Storage> storage, Dtype dtype, const Shape& shape,
                       const Strides& strides, size_t offset) {
  if (strides.size() != shape.size())
    throw std::invalid_argument(fmt::format("[view_of] {} strides for shape {}", strides.size(), shape_str(shape)));
  size_t last = offset;  // the furthest element the view reaches
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (strides[i] < 0) throw std::invalid_argument("[view_of] negative strides are not supported");
    if (shape[i] == 0) empty = true;
    else last += (shape[i] - 1) * size_t(strides[i]);
  }
  if (!empty && (last + 1) * dtype_size(dtype) > storage->nbytes())
    throw std::out_of_range(fmt::format("[view_of] view {} at offset {} reaches past a storage of {} bytes",
                                        shape_str(shape), offset, storage->nbytes()));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->dtype = dtype;
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = offset;
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

Tensor Tensor::from_ints(const std::vector<int64_t>& values, const Shape& shape) {
  if (values.size() != shape_numel(shape))
    throw std::invalid_argument(fmt::format("[from_ints] {} values do not fill shape {}",
                                            values.size(), shape_str(shape)));
  Tensor t = empty(shape, Dtype::Int64);
  std::copy(values.begin(), values.end(), t.data_as<int64_t>());
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
const Strides& Tensor::strides() const {
  check_defined(impl_, "strides");
  return impl_->strides;
}
size_t Tensor::offset() const {
  check_defined(impl_, "offset");
  return impl_->offset;
}
Dtype Tensor::dtype() const {
  check_defined(impl_, "dtype");
  return impl_->dtype;
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

bool Tensor::is_contiguous() const {
  const Shape& s = shape();
  int64_t expected = 1;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= int64_t(s[i]);
  }
  return true;
}

void* Tensor::raw_data() const {
  check_defined(impl_, "raw_data");
  return static_cast<uint8_t*>(impl_->storage->data()) + impl_->offset * dtype_size(impl_->dtype);
}

namespace {
template <class T>
Dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>) return Dtype::Float32;
  else if constexpr (std::is_same_v<T, int64_t>) return Dtype::Int64;
  else return Dtype::BFloat16;  // uint16_t: either 16-bit float, checked by size below
}

void check_packed(const Tensor& t, Dtype want, const char* what) {
  const bool ok = want == Dtype::BFloat16 ? dtype_size(t.dtype()) == 2 : t.dtype() == want;
  if (!ok)
    throw std::invalid_argument(fmt::format("[{}] expects a {} tensor, got {} of shape {}", what,
                                            dtype_name(want), dtype_name(t.dtype()), shape_str(t.shape())));
  if (!t.is_contiguous())
    throw std::logic_error(fmt::format("[{}] tensor of shape {} is a strided view; call contiguous() first",
                                       what, shape_str(t.shape())));
}
}  // namespace

template <class T>
T* Tensor::data_as() {
  check_defined(impl_, "data");
  check_packed(*this, dtype_of<T>(), "data");
  return static_cast<T*>(raw_data());
}
template <class T>
const T* Tensor::data_as() const {
  return const_cast<Tensor*>(this)->data_as<T>();
}
template float* Tensor::data_as<float>();
template int64_t* Tensor::data_as<int64_t>();
template uint16_t* Tensor::data_as<uint16_t>();
template const float* Tensor::data_as<float>() const;
template const int64_t* Tensor::data_as<int64_t>() const;
template const uint16_t* Tensor::data_as<uint16_t>() const;

float* Tensor::data() { return data_as<float>(); }
const float* Tensor::data() const { return data_as<float>(); }

float Tensor::item() const {
  if (numel() != 1)
    throw std::invalid_argument(
        fmt::format("[item] needs a one-element tensor, got shape {}", shape_str(shape())));
  float v;
  convert(raw_data(), dtype(), &v, Dtype::Float32, 1);
  return v;
}

std::vector<float> Tensor::to_vector() const {
  NoGradGuard no_grad;
  const Tensor c = contiguous().to(Dtype::Float32);
  return std::vector<float>(c.data(), c.data() + numel());
}

std::vector<int64_t> Tensor::to_ints() const {
  NoGradGuard no_grad;
  const Tensor c = contiguous();
  std::vector<int64_t> out(numel());
  convert(c.raw_data(), c.dtype(), out.data(), Dtype::Int64, out.size());
  return out;
}

bool Tensor::requires_grad() const {
  check_defined(impl_, "requires_grad");
  return impl_->requires_grad;
}

Tensor& Tensor::requires_grad_(bool on) {
  check_defined(impl_, "requires_grad_");
  if (impl_->grad_fn)
    throw std::logic_error("[requires_grad_] only leaf tensors can change requires_grad");
  if (on && !is_floating(impl_->dtype))
    throw std::invalid_argument(fmt::format("[requires_grad_] a {} tensor cannot require grad", dtype_name(impl_->dtype)));
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
  if (impl_->grad_slot) impl_->grad_slot_written = true;  // the slot may hold the old gradient
}

void Tensor::zero_grad() {
  check_defined(impl_, "zero_grad");
  impl_->grad.reset();
  if (impl_->grad_slot) impl_->grad_slot_written = true;  // the slot still holds it
}

void Tensor::register_grad_hook(GradHook hook) {
  check_defined(impl_, "register_grad_hook");
  if (impl_->grad_fn) throw std::logic_error("[register_grad_hook] hooks are for leaf tensors");
  impl_->grad_hooks.push_back(std::move(hook));
}

Tensor Tensor::detach() const {
  check_defined(impl_, "detach");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->dtype = impl_->dtype;
  impl->shape = impl_->shape;
  impl->strides = impl_->strides;
  impl->offset = impl_->offset;
  return Tensor(std::move(impl));
}

Tensor Tensor::clone() const {
  check_defined(impl_, "clone");
  Tensor t = empty(shape(), dtype());
  const size_t es = dtype_size(dtype());
  if (is_contiguous()) {
    if (numel() > 0) std::memcpy(t.raw_data(), raw_data(), numel() * es);  // an empty tensor's data may be null
    return t;
  }
  std::vector<size_t> st(strides().begin(), strides().end());
  const uint8_t* src = static_cast<const uint8_t*>(raw_data());
  uint8_t* dst = static_cast<uint8_t*>(t.raw_data());
  const size_t inner = dim() ? st.back() : 1;
  detail::for_each_run(shape(), {st}, [&](size_t o, const size_t* off, size_t n) {
    if (inner == 1) {
      std::memcpy(dst + o * es, src + off[0] * es, n * es);
    } else {
      for (size_t k = 0; k < n; ++k) std::memcpy(dst + (o + k) * es, src + (off[0] + k * inner) * es, es);
    }
  });
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
Tensor Tensor::contiguous() const { return xg::contiguous(*this); }
Tensor Tensor::to(Dtype dtype) const { return xg::cast(*this, dtype); }

void Tensor::copy_(const Tensor& src) {
  check_defined(impl_, "copy_");
  NoGradGuard no_grad;
  detail::copy_into(*this, src.to(dtype()));
  bump_version();
}

uint64_t Tensor::version() const {
  check_defined(impl_, "version");
  return impl_->storage->version;
}

void Tensor::bump_version() {
  check_defined(impl_, "bump_version");
  ++impl_->storage->version;
}

bool Tensor::same_storage(const Tensor& other) const {
  return defined() && other.defined() && impl_->storage == other.impl_->storage;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  os << "Tensor(shape=" << shape_str(t.shape());
  if (t.dtype() != Dtype::Float32) os << ", dtype=" << dtype_name(t.dtype());
  os << ", data=[";
  const std::vector<float> v = t.to_vector();
  const size_t n = std::min<size_t>(v.size(), 16);
  for (size_t i = 0; i < n; ++i) os << (i ? ", " : "") << v[i];
  if (v.size() > n) os << ", ...";
  return os << "])";
}

}  // namespace xg
