#include "autograd/ops/broadcast.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"

namespace xg::detail {

size_t normalize_axis(int axis, size_t rank, const char* op) {
  const long r = long(rank);
  const long a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    throw std::out_of_range(fmt::format("[{}] axis {} is out of range for a tensor of rank {}", op,
                                        axis, rank));
  return size_t(a);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const size_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const size_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument(fmt::format("[{}] shapes {} and {} do not broadcast", op,
                                              shape_str(a), shape_str(b)));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<size_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<size_t> strides(out.size(), 0);
  size_t stride = 1;
  for (size_t i = in.size(); i-- > 0;) {
    const size_t o = i + (out.size() - in.size());
    strides[o] = (in[i] == 1 && out[o] != 1) ? 0 : stride;
    stride *= in[i];
  }
  return strides;
}

size_t prod(const Shape& s, size_t begin, size_t end) {
  size_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

Tensor alias_with_shape(const Tensor& t, const Shape& shape) {
  return Tensor::view_of(t.impl()->storage, t.dtype(), shape, contiguous_strides(shape), t.offset());
}

const Tensor& checked_float(const Tensor& t, const char* op) {
  if (t.dtype() != Dtype::Float32)
    throw std::invalid_argument(fmt::format("[{}] expects a float32 tensor, got {} of shape {}", op,
                                            dtype_name(t.dtype()), shape_str(t.shape())));
  return t;
}

Tensor dense(const Tensor& t, const char* op) {
  checked_float(t, op);
  if (t.is_contiguous()) return t;
  NoGradGuard no_grad;
  return t.clone();
}

void copy_into(Tensor& dst, const Tensor& src) {
  if (dst.shape() != src.shape() || dst.dtype() != src.dtype())
    throw std::invalid_argument(fmt::format("[copy_into] {} {} into {} {}", dtype_name(src.dtype()),
                                            shape_str(src.shape()), dtype_name(dst.dtype()), shape_str(dst.shape())));
  const size_t es = dtype_size(dst.dtype());
  const Tensor s = src.is_contiguous() ? src : src.clone();
  const uint8_t* ps = static_cast<const uint8_t*>(s.raw_data());
  uint8_t* pd = static_cast<uint8_t*>(dst.raw_data());
  if (dst.is_contiguous()) {
    std::memcpy(pd, ps, s.numel() * es);
    return;
  }
  std::vector<size_t> st(dst.strides().begin(), dst.strides().end());
  const size_t inner = st.empty() ? 1 : st.back();
  for_each_run(dst.shape(), {st}, [&](size_t o, const size_t* off, size_t n) {
    for (size_t k = 0; k < n; ++k) std::memcpy(pd + (off[0] + k * inner) * es, ps + (o + k) * es, es);
  });
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const Shape& gs = g.shape();
  const size_t lead = gs.size() - shape.size();
  std::vector<int> axes;
  for (size_t i = 0; i < gs.size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && gs[i] != 1)) axes.push_back(int(i));
  Tensor s = sum(g, axes, /*keepdim=*/true);
  std::vector<long> target(shape.begin(), shape.end());
  return reshape(s, target);
}

}  // namespace xg::detail
