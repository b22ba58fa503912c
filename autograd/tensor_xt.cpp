#include "autograd/tensor_xt.hpp"

#include <algorithm>

namespace xg {

Tensor from_xarray(const xt::xarray<float>& a, bool requires_grad) {
  Tensor t = Tensor::empty(Shape(a.shape().begin(), a.shape().end()));
  std::copy(a.begin(), a.end(), t.data());  // xarray iterates in row-major order
  if (requires_grad) t.requires_grad_();
  return t;
}

xt::xarray<float> to_xarray(const Tensor& t) {
  xt::xarray<float> a = xt::xarray<float>::from_shape(t.shape());
  const std::vector<float> v = t.to_vector();
  std::copy(v.begin(), v.end(), a.data());
  return a;
}

}  // namespace xg
