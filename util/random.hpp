#pragma once
#include <cstddef>
#include <cstdint>

namespace xg {

// Seeded pseudo-random source (xoshiro256**, SplitMix64 seeding). Its own algorithms
// rather than <random> distributions, so a seed gives the same numbers with every standard library.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0x5eed) { seed_(seed); }
  void seed_(uint64_t seed);
  uint64_t next_u64();
  // n 32-bit words: the low, then the high half of each of (n + 1) / 2 next_u64() draws (an odd n
  // leaves the last draw's high half unused). The same numbers as those calls, without a call per
  // draw (dropout's masks are made of them).
  void fill_u32(uint32_t* out, size_t n);
  // Uniform in [0, 1) with 24 random bits.
  float uniform();
  // Standard normal (Box-Muller; caches the second value).
  float normal();
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n);

  struct State {
    uint64_t s[4];
    bool has_spare;
    float spare;
  };
  State state() const { return {{s_[0], s_[1], s_[2], s_[3]}, has_spare_, spare_}; }
  void set_state(const State& st);

 private:
  uint64_t s_[4]{};
  bool has_spare_ = false;
  float spare_ = 0.f;
};

// Process-wide generator used when an op is not given one; reseed with manual_seed().
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace xg
