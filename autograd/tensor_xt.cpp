#include "autograd/tensor_xt.hpp"

#include <algorithm>

namespace xg {

Tensor from_xarray(const xt::xarray<float>& a, bool requires_grad) {
  std::vector<float> values(a.begin(), a.end());  // xarray iterates in row-major order
  return Tensor::from_vector(values, Shape(a.shape().begin(), a.shape().end()), requires_grad);
}

xt::xarray<float> to_xarray(const Tensor& t) {
  xt::xarray<float> a = xt::xarray<float>::from_shape(t.shape());
  const std::vector<float> v = t.to_vector();
  std::copy(v.begin(), v.end(), a.data());
  return a;
}

}  // namespace xg
