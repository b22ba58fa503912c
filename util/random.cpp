#include "util/random.hpp"

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

// xoshiro256** (Blackman & Vigna).
uint64_t Generator::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

void Generator::fill_u32(uint32_t* out, size_t n) {
  uint64_t s0 = s_[0], s1 = s_[1], s2 = s_[2], s3 = s_[3];  // in registers, as next_u64's steps
  for (size_t i = 0; i < n; i += 2) {
    const uint64_t result = rotl(s1 * 5, 7) * 9;
    const uint64_t t = s1 << 17;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 45);
    out[i] = uint32_t(result);
    if (i + 1 < n) out[i + 1] = uint32_t(result >> 32);
  }
  s_[0] = s0, s_[1] = s1, s_[2] = s2, s_[3] = s3;
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
