#pragma once
// Tensors to and from xtensor: copies into and out of xt::xarray, and a non-owning view. Kept out
// of autograd/tensor.hpp, which nearly every file includes, so that only the files that use
// xtensor pay for its headers.
#include "autograd/tensor.hpp"
#include "autograd/xt.hpp"

namespace xg {

// A float32 tensor with a's shape and values (row-major).
Tensor from_xarray(const xt::xarray<float>& a, bool requires_grad = false);
// A copy as an xt::xarray with t's shape.
xt::xarray<float> to_xarray(const Tensor& t);
// A non-owning xtensor view of t's float32 data with its shape (valid while t lives; t contiguous).
inline auto xt_view(const Tensor& t) { return xt::adapt(const_cast<float*>(t.data()), t.numel(), xt::no_ownership(), t.shape()); }

}  // namespace xg
