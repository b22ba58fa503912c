#include "util/random.hpp"

#include <algorithm>
#include <cmath>

namespace xg {

static uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void Generator::seed_(uint64_t seed) {
  for (auto& w : s_) w = splitmix64(seed);
  has_spare_ = false;
}

// One xoshiro256** step (Blackman & Vigna) on state s; returns the draw.
static inline uint64_t xoshiro_step(uint64_t (&s)[4]) {
  const uint64_t result = rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t Generator::next_u64() { return xoshiro_step(s_); }

void Generator::fill_u32(uint32_t* out, size_t n) {
  uint64_t s[4] = {s_[0], s_[1], s_[2], s_[3]};  // a local copy stays in registers
  for (size_t i = 0; i < n; i += 2) {
    const uint64_t r = xoshiro_step(s);
    out[i] = uint32_t(r);
    if (i + 1 < n) out[i + 1] = uint32_t(r >> 32);
  }
  std::copy(s, s + 4, s_);
}

float Generator::uniform() { return float(next_u64() >> 40) * (1.0f / 16777216.0f); }

float Generator::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // Double precision inside so the tails are right; 1 - u keeps log() away from 0.
  const double u1 = 1.0 - double(next_u64() >> 11) * (1.0 / 9007199254740992.0);
  const double u2 = double(next_u64() >> 11) * (1.0 / 9007199254740992.0);
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 6.283185307179586 * u2;
  spare_ = float(r * std::sin(theta));
  has_spare_ = true;
  return float(r * std::cos(theta));
}

uint64_t Generator::below(uint64_t n) {
  // Lemire's unbiased bounded integer.
  __uint128_t m = __uint128_t(next_u64()) * n;
  uint64_t low = uint64_t(m);
  if (low < n) {
    const uint64_t threshold = -n % n;
    while (low < threshold) {
      m = __uint128_t(next_u64()) * n;
      low = uint64_t(m);
    }
  }
  return uint64_t(m >> 64);
}

void Generator::set_state(const State& st) {
  for (int i = 0; i < 4; ++i) s_[i] = st.s[i];
  has_spare_ = st.has_spare;
  spare_ = st.spare;
}

Generator& default_generator() {
  static Generator g;
  return g;
}

void manual_seed(uint64_t seed) { default_generator().seed_(seed); }

}  // namespace xg
