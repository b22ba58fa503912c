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

// Pins vectors to registers at this point. In a register tile where each loaded vector feeds
// several FMAs, GCC otherwise folds the load into every one of them, and the tile runs at the
// load ports' rate instead of the FMA units' (one 512-bit load per cycle on AMD Zen 4; measured
// 30% faster in the attention kernels with it).
template <class Batch>
inline void keep_in_register(Batch& v) {
#if defined(__x86_64__) && defined(__GNUC__)
  asm("" : "+v"(v.data));  // "v": any of the 32 AVX-512 registers (16 without it)
#endif
}
template <class... Batches>
inline void keep_in_register(Batches&... v) {
  (keep_in_register<Batches>(v), ...);
}
}  // namespace xg
