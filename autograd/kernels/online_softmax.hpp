#pragma once
// The online softmax step both attention kernels take per score row and key block (FlashAttention,
// Dao et al. 2022): a block's scores become exponentials against the running max, and the running
// sum and the row's output so far are rescaled by how far the max moved.
#include <cmath>
#include <cstddef>
#include <limits>

#include "autograd/xt.hpp"

namespace xg::attn {

// row[0, n) (n a multiple of kSimdWidth) becomes exp(row - m'), m' = max(m, max of the row); l is
// rescaled to m' and grows by the row's sum; o[0, od) (od a multiple of kSimdWidth) is scaled by
// exp(m - m'). m = -inf and l = 0 start a row. Returns false, with the row zeroed and m, l, o left
// as they are, while every score so far is -inf (no key to attend yet).
inline bool online_softmax_block(float* row, size_t n, float& m, float& l, float* o, size_t od) {
  constexpr size_t W = kSimdWidth;
  fbatch vmax(m);
  for (size_t j = 0; j < n; j += W) vmax = xsimd::max(vmax, fbatch::load_unaligned(row + j));
  const float mx = hmax(vmax);
  if (mx == -std::numeric_limits<float>::infinity()) {
    for (size_t j = 0; j < n; ++j) row[j] = 0.f;
    return false;
  }
  const float correction = std::exp(m - mx);  // 0 on the first block (m = -inf)
  const fbatch vmx(mx);
  fbatch vsum(0.f);
  for (size_t j = 0; j < n; j += W) {
    const fbatch e = xsimd::exp(fbatch::load_unaligned(row + j) - vmx);
    e.store_unaligned(row + j);
    vsum += e;
  }
  l = l * correction + hsum(vsum);
  m = mx;
  if (correction != 1.f) {
    const fbatch vc(correction);
    for (size_t d = 0; d < od; d += W) (fbatch::load_unaligned(o + d) * vc).store_unaligned(o + d);
  }
  return true;
}

}  // namespace xg::attn
