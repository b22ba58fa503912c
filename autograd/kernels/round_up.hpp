#pragma once
// n rounded up to a multiple of m (m > 0): panel, block and SIMD padding in the kernels.
#include <cstddef>

namespace xg {
inline size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
}  // namespace xg
