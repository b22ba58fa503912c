#pragma once
// Reproducible test inputs for the kernel tests.
#include <cstdint>
#include <vector>

#include "util/random.hpp"

// n values uniform in [lo, hi), from a generator seeded with `seed`.
inline std::vector<float> random_vec(size_t n, uint64_t seed, float lo = -0.5f, float hi = 0.5f) {
  xg::Generator g(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = lo + (hi - lo) * g.uniform();
  return v;
}
