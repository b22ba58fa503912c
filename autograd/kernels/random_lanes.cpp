#include "autograd/kernels/random_lanes.hpp"

#include <algorithm>
#include <cstring>

#include "autograd/xt.hpp"

namespace xg {
namespace {
using u64batch = xsimd::batch<uint64_t>;
constexpr size_t kLanes = u64batch::size;

inline u64batch rotl(const u64batch& x, int k) { return (x << k) | (x >> (64 - k)); }

// Generator::fill_u32 on up to kLanes generators: xoshiro256** (Blackman & Vigna) with its two
// multiplications as shifts and adds (x * 5 = (x << 2) + x), which AVX2 has for 64-bit lanes.
void fill_group(Generator* gens, uint32_t* const* out, size_t count, size_t n) {
  alignas(64) uint64_t s[4][kLanes] = {};  // lanes past count run on zeros and are dropped
  for (size_t k = 0; k < count; ++k) {
    const Generator::State st = gens[k].state();
    for (int w = 0; w < 4; ++w) s[w][k] = st.s[w];
  }
  u64batch s0 = u64batch::load_aligned(s[0]), s1 = u64batch::load_aligned(s[1]),
           s2 = u64batch::load_aligned(s[2]), s3 = u64batch::load_aligned(s[3]);
  const auto step = [&] {  // returns each generator's next draw
    const u64batch r = rotl((s1 << 2) + s1, 7), result = (r << 3) + r;
    const u64batch t = s1 << 17;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 45);
    return result;
  };
  // Words i and i + 1 are a draw's low and high halves: its little-endian bytes. (Constant
  // sizes: a memcpy of a variable size is a call per word.)
  size_t i = 0;
#if XSIMD_WITH_AVX2 && !XSIMD_WITH_AVX512F
  // Four steps' draws (a row per step, a column per generator) transposed into a row of four
  // draws per generator: one store per generator every four steps, not one per draw (stores,
  // one a cycle, were the bound).
  static_assert(kLanes == 4);
  for (; i + 7 < n; i += 8) {
    __m256i r[4];
    for (auto& row : r) row = step();
    const __m256i lo01 = _mm256_unpacklo_epi64(r[0], r[1]), hi01 = _mm256_unpackhi_epi64(r[0], r[1]);
    const __m256i lo23 = _mm256_unpacklo_epi64(r[2], r[3]), hi23 = _mm256_unpackhi_epi64(r[2], r[3]);
    const __m256i per_generator[4] = {
        _mm256_permute2x128_si256(lo01, lo23, 0x20), _mm256_permute2x128_si256(hi01, hi23, 0x20),
        _mm256_permute2x128_si256(lo01, lo23, 0x31), _mm256_permute2x128_si256(hi01, hi23, 0x31)};
    for (size_t k = 0; k < count; ++k)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[k] + i), per_generator[k]);
  }
#endif
  alignas(64) uint64_t draw[kLanes];
  for (; i + 1 < n; i += 2) {
    step().store_aligned(draw);
    for (size_t k = 0; k < count; ++k) std::memcpy(out[k] + i, &draw[k], 8);
  }
  if (i < n) {
    step().store_aligned(draw);
    for (size_t k = 0; k < count; ++k) out[k][i] = uint32_t(draw[k]);
  }
  s0.store_aligned(s[0]);
  s1.store_aligned(s[1]);
  s2.store_aligned(s[2]);
  s3.store_aligned(s[3]);
  for (size_t k = 0; k < count; ++k) {
    Generator::State st = gens[k].state();  // keeps the normal() cache as it was
    for (int w = 0; w < 4; ++w) st.s[w] = s[w][k];
    gens[k].set_state(st);
  }
}
}  // namespace

size_t generator_lanes() { return kLanes; }

void fill_u32_side_by_side(Generator* gens, uint32_t* const* out, size_t count, size_t n) {
  static_assert(sizeof(uint64_t) == 2 * sizeof(uint32_t) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
                "a draw's low half is its first word");
  for (size_t k = 0; k < count; k += kLanes)
    fill_group(gens + k, out + k, std::min(kLanes, count - k), n);
}

}  // namespace xg
