#pragma once
// The one place xtensor and xsimd are included, so an upgrade (xtensor 0.25 moved headers to
// xtensor/containers/...) is one edit. XTENSOR_USE_XSIMD comes from the xgrad_config target.
#include <xsimd/xsimd.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

namespace xg {
// SIMD batch of floats for the architecture this build targets (AVX-512 with -march=native here).
using fbatch = xsimd::batch<float>;
constexpr size_t kSimdWidth = fbatch::size;

// Horizontal reductions (xsimd 8.1 has hadd only; later versions call it reduce_add).
inline float hsum(const fbatch& v) { return xsimd::hadd(v); }
inline float hmax(const fbatch& v) {
  alignas(64) float lanes[kSimdWidth];
  v.store_aligned(lanes);
  float m = lanes[0];
  for (size_t i = 1; i < kSimdWidth; ++i) m = lanes[i] > m ? lanes[i] : m;
  return m;
}
}  // namespace xg
