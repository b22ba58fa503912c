#include "autograd/ops/broadcast.hpp"

#include <fmt/format.h>

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
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.impl()->storage;
  impl->shape = shape;
  return Tensor(std::move(impl));
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
