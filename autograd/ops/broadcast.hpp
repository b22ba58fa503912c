#pragma once
// Internal helpers shared by the op families: axis normalisation, NumPy broadcasting, and the
// one place a broadcast is undone in the backward (sum_to).
#include <vector>

#include "autograd/tensor.hpp"

namespace xg::detail {

// Axis in [-rank, rank) -> [0, rank); throws "[op] axis ..." otherwise.
size_t normalize_axis(int axis, size_t rank, const char* op);

// The broadcast of two shapes; throws "[op] shapes [..] and [..] do not broadcast".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Element strides of `in` viewed at `out`'s rank: 0 along broadcast axes.
std::vector<size_t> broadcast_strides(const Shape& in, const Shape& out);

// Calls fn(out_offset, offsets[0..k), run_length) for each innermost run of `out` (row-major),
// where operand j advances by strides[j] per output element inside a run.
template <class F>
void for_each_run(const Shape& out, const std::vector<std::vector<size_t>>& strides, F fn) {
  const size_t rank = out.size();
  const size_t k = strides.size();
  std::vector<size_t> offsets(k, 0);
  if (rank == 0) {
    fn(size_t(0), offsets.data(), size_t(1));
    return;
  }
  const size_t inner = out[rank - 1];
  size_t outer = 1;
  for (size_t d = 0; d + 1 < rank; ++d) outer *= out[d];
  if (inner == 0 || outer == 0) return;
  std::vector<size_t> index(rank, 0);
  for (size_t o = 0; o < outer; ++o) {
    fn(o * inner, offsets.data(), inner);
    for (size_t d = rank - 1; d-- > 0;) {  // odometer over the outer axes
      ++index[d];
      for (size_t j = 0; j < k; ++j) offsets[j] += strides[j][d];
      if (index[d] < out[d]) break;
      for (size_t j = 0; j < k; ++j) offsets[j] -= strides[j][d] * out[d];
      index[d] = 0;
    }
  }
}

// Sums g over the axes that broadcasting added or stretched, giving `shape`.
Tensor sum_to(const Tensor& g, const Shape& shape);

// A new graph-free handle on t's data with another shape of the same size; t must be contiguous.
Tensor alias_with_shape(const Tensor& t, const Shape& shape);

// t as packed float32 data for a kernel: t itself when it already is, else a contiguous copy
// (not recorded: the op records t itself). Throws "[op] expects float32 ..." for other dtypes.
Tensor dense(const Tensor& t, const char* op);

// t itself after checking that it is float32 (for kernels that read strides themselves).
const Tensor& checked_float(const Tensor& t, const char* op);

// Copies src into dst element by element (same shape; either may be a strided view).
void copy_into(Tensor& dst, const Tensor& src);

// Product of dims [begin, end).
size_t prod(const Shape& s, size_t begin, size_t end);

}  // namespace xg::detail
