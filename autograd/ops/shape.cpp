// Shape ops. Views (no copy): reshape of contiguous data, permute/transpose, slice, split.
// Copies: contiguous, cast, concat, index_select, embedding.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "autograd/engine.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops/broadcast.hpp"
#include "autograd/parallel.hpp"

namespace xg {
using detail::prod;

Tensor reshape(const Tensor& x, const std::vector<long>& shape) {
  Shape target(shape.size());
  long infer = -1;
  size_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw std::invalid_argument("[reshape] only one dimension can be -1");
      infer = long(i);
    } else if (shape[i] < 0) {
      throw std::invalid_argument(fmt::format("[reshape] invalid dimension {}", shape[i]));
    } else {
      target[i] = size_t(shape[i]);
      known *= target[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0)
      throw std::invalid_argument(fmt::format("[reshape] cannot infer -1 reshaping {} ({} elements)",
                                              shape_str(x.shape()), x.numel()));
    target[size_t(infer)] = x.numel() / known;
  }
  if (shape_numel(target) != x.numel())
    throw std::invalid_argument(fmt::format("[reshape] cannot reshape {} ({} elements) to {}",
                                            shape_str(x.shape()), x.numel(), shape_str(target)));
  // A strided view is packed first (as torch.reshape does); the copy is recorded, so the
  // gradient still reaches x.
  const Tensor src = x.is_contiguous() ? x : contiguous(x);
  Tensor out = detail::alias_with_shape(src, target);
  const Shape in_shape = x.shape();
  return record("reshape", out, {src}, [in_shape](const Tensor& g) -> std::vector<Tensor> {
    return {detail::alias_with_shape(g.contiguous(), in_shape)};
  });
}

Tensor permute(const Tensor& x, const std::vector<int>& dims) {
  const size_t rank = x.dim();
  if (dims.size() != rank)
    throw std::invalid_argument(fmt::format("[permute] {} axes given for a tensor of rank {}",
                                            dims.size(), rank));
  std::vector<size_t> perm(rank);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < rank; ++i) {
    perm[i] = detail::normalize_axis(dims[i], rank, "permute");
    if (seen[perm[i]]) throw std::invalid_argument("[permute] an axis is repeated");
    seen[perm[i]] = true;
  }
  Shape out_shape(rank);
  Strides strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_shape[i] = x.shape()[perm[i]];
    strides[i] = x.strides()[perm[i]];
  }
  Tensor out = Tensor::view_of(x.impl()->storage, x.dtype(), out_shape, strides, x.offset());
  std::vector<int> inverse(rank);
  for (size_t i = 0; i < rank; ++i) inverse[perm[i]] = int(i);
  out = record("permute", out, {x}, [inverse](const Tensor& g) -> std::vector<Tensor> {
    return {permute(g, inverse)};
  });
  accept_strided_grad(out);
  return out;
}

Tensor transpose(const Tensor& x, int axis0, int axis1) {
  const size_t a = detail::normalize_axis(axis0, x.dim(), "transpose");
  const size_t b = detail::normalize_axis(axis1, x.dim(), "transpose");
  std::vector<int> dims(x.dim());
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[a], dims[b]);
  return permute(x, dims);
}

namespace {
// Copies a (outer, len_src, inner) block range [src_start, src_start+n) along the middle axis
// into a (outer, len_dst, inner) buffer at dst_start.
void copy_axis_range(const float* src, size_t len_src, size_t src_start, float* dst,
                     size_t len_dst, size_t dst_start, size_t n, size_t outer, size_t inner) {
  for (size_t o = 0; o < outer; ++o)
    std::memcpy(dst + (o * len_dst + dst_start) * inner, src + (o * len_src + src_start) * inner,
                n * inner * sizeof(float));
}
}  // namespace

Tensor slice(const Tensor& x, int axis_in, long start, long end) {
  const size_t axis = detail::normalize_axis(axis_in, x.dim(), "slice");
  const Shape& s = x.shape();
  const long len = long(s[axis]);
  const long b = std::clamp(start < 0 ? start + len : start, 0L, len);
  const long e = std::clamp(end < 0 ? end + len : end, 0L, len);
  if (e < b)
    throw std::invalid_argument(fmt::format("[slice] empty range [{}, {}) on axis {} of {}", start,
                                            end, axis_in, shape_str(s)));
  Shape out_shape = s;
  out_shape[axis] = size_t(e - b);
  Tensor out = Tensor::view_of(x.impl()->storage, x.dtype(), out_shape, x.strides(),
                               x.offset() + size_t(b) * size_t(x.strides()[axis]));
  const size_t n = out_shape[axis], offset = size_t(b);
  const size_t outer = prod(s, 0, axis), inner = prod(s, axis + 1, s.size());
  out = record("slice", out, {x}, [s, axis, offset, n, outer, inner](const Tensor& g) -> std::vector<Tensor> {
    Tensor dx = Tensor::zeros(s);
    copy_axis_range(g.data(), n, 0, dx.data(), s[axis], offset, n, outer, inner);
    return {dx};
  });
  return out;
}

Tensor concat(const std::vector<Tensor>& xs, int axis_in) {
  if (xs.empty()) throw std::invalid_argument("[concat] no tensors given");
  const Shape& s0 = xs[0].shape();
  const size_t axis = detail::normalize_axis(axis_in, s0.size(), "concat");
  Shape out_shape = s0;
  out_shape[axis] = 0;
  for (const auto& t : xs) {
    Shape a = t.shape(), b = s0;
    if (a.size() != b.size() || (a[axis] = 0, b[axis] = 0, a != b))
      throw std::invalid_argument(fmt::format("[concat] shape {} does not match {} off axis {}",
                                              shape_str(t.shape()), shape_str(s0), axis_in));
    out_shape[axis] += t.shape()[axis];
  }
  Tensor out = Tensor::empty(out_shape);
  const size_t outer = prod(s0, 0, axis), inner = prod(s0, axis + 1, s0.size());
  std::vector<size_t> sizes;
  for (size_t i = 0, at = 0; i < xs.size(); ++i) {
    const size_t n = xs[i].shape()[axis];
    copy_axis_range(detail::dense(xs[i], "concat").data(), n, 0, out.data(), out_shape[axis], at, n, outer, inner);
    sizes.push_back(n);
    at += n;
  }
  return record("concat", out, xs, [sizes, axis](const Tensor& g) -> std::vector<Tensor> {
    return split(g, sizes, int(axis));
  });
}

std::vector<Tensor> split(const Tensor& x, const std::vector<size_t>& sizes, int axis_in) {
  const size_t axis = detail::normalize_axis(axis_in, x.dim(), "split");
  const size_t total = std::accumulate(sizes.begin(), sizes.end(), size_t(0));
  if (total != x.shape()[axis])
    throw std::invalid_argument(fmt::format("[split] sizes add up to {} but axis {} of {} has {}",
                                            total, axis_in, shape_str(x.shape()), x.shape()[axis]));
  std::vector<Tensor> out;
  long at = 0;
  for (size_t n : sizes) {
    out.push_back(slice(x, int(axis), at, at + long(n)));
    at += long(n);
  }
  return out;
}

namespace {
void check_indices(const std::vector<int64_t>& idx, size_t len, const char* op, const Shape& s) {
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i] < 0 || size_t(idx[i]) >= len)
      throw std::out_of_range(fmt::format("[{}] index {} (at position {}) is out of range for "
                                          "size {} (tensor shape {})",
                                          op, idx[i], i, len, shape_str(s)));
}
}  // namespace

Tensor index_select(const Tensor& x, int axis_in, const std::vector<int64_t>& indices) {
  const size_t axis = detail::normalize_axis(axis_in, x.dim(), "index_select");
  const Shape& s = x.shape();
  check_indices(indices, s[axis], "index_select", s);
  Shape out_shape = s;
  out_shape[axis] = indices.size();
  Tensor out = Tensor::empty(out_shape);
  const size_t outer = prod(s, 0, axis), inner = prod(s, axis + 1, s.size());
  const Tensor xc = detail::dense(x, "index_select");
  for (size_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < indices.size(); ++k)
      std::memcpy(out.data() + (o * indices.size() + k) * inner,
                  xc.data() + (o * s[axis] + size_t(indices[k])) * inner, inner * sizeof(float));
  return record("index_select", out, {x},
                [indices, s, axis, outer, inner](const Tensor& g) -> std::vector<Tensor> {
                  Tensor dx = Tensor::zeros(s);  // scatter-add: repeated indices accumulate
                  for (size_t o = 0; o < outer; ++o)
                    for (size_t k = 0; k < indices.size(); ++k) {
                      float* dst = dx.data() + (o * s[axis] + size_t(indices[k])) * inner;
                      vec::add(dst, g.data() + (o * indices.size() + k) * inner, dst, inner);
                    }
                  return {dx};
                });
}

Tensor embedding(const Tensor& weight, const std::vector<int64_t>& ids, const Shape& ids_shape,
                 int64_t padding_idx) {
  if (weight.dim() != 2)
    throw std::invalid_argument(
        fmt::format("[embedding] weight must be (vocab, dim), got {}", shape_str(weight.shape())));
  if (shape_numel(ids_shape) != ids.size())
    throw std::invalid_argument(fmt::format("[embedding] {} ids do not fill ids shape {}",
                                            ids.size(), shape_str(ids_shape)));
  const size_t V = weight.shape()[0], D = weight.shape()[1];
  check_indices(ids, V, "embedding", weight.shape());
  Shape out_shape = ids_shape;
  out_shape.push_back(D);
  Tensor out = Tensor::empty(out_shape);
  const Tensor wc = detail::dense(weight, "embedding");
  for (size_t k = 0; k < ids.size(); ++k)
    std::memcpy(out.data() + k * D, wc.data() + size_t(ids[k]) * D, D * sizeof(float));
  const Shape ws = weight.shape();
  // Only the looked-up rows get gradient: into a parameter's own gradient when the engine offers
  // it, else into a dense zeroed one. Row ids[k] gets row k of g (padding ids none), in order.
  out = record_into("embedding", out, {weight}, {},
                    [ids, ws, D, padding_idx](const Tensor& g, const std::vector<GradInto>& into) -> std::vector<Tensor> {
                      Tensor dw = into[0].dst.defined() ? into[0].dst : Tensor::zeros(ws);
                      if (into[0].fresh) fill_in_parallel(dw.data(), dw.numel(), 0.f);  // untied table
                      for (size_t k = 0; k < ids.size(); ++k) {
                        if (ids[k] == padding_idx) continue;
                        float* dst = dw.data() + size_t(ids[k]) * D;
                        vec::add(dst, g.data() + k * D, dst, D);
                      }
                      return {into[0].dst.defined() ? Tensor() : dw};
                    });
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& ids, int64_t padding_idx) {
  if (ids.dtype() != Dtype::Int64)
    throw std::invalid_argument(fmt::format("[embedding] ids must be int64, got {}", dtype_name(ids.dtype())));
  return embedding(weight, ids.to_ints(), ids.shape(), padding_idx);
}

Tensor contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor out = x.detach().clone();
  return record("contiguous", out, {x}, [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
}

Tensor cast(const Tensor& x, Dtype dtype) {
  if (x.dtype() == dtype) return x;
  const Tensor src = x.detach().contiguous();
  Tensor out = Tensor::empty(x.shape(), dtype);
  convert(src.raw_data(), src.dtype(), out.raw_data(), dtype, x.numel());
  if (!is_floating(dtype)) return out;  // ids and labels carry no gradient
  const Dtype from = x.dtype();
  return record("cast", out, {x}, [from](const Tensor& g) -> std::vector<Tensor> { return {cast(g, from)}; });
}

}  // namespace xg
