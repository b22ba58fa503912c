#pragma once
// Several seeded generators drawn side by side, one per SIMD lane of 64-bit words.
// xoshiro256** is a serial chain within one generator (~1.7 ns a draw here), so dropout's masks,
// one generator per chunk, come faster from running independent chunks' generators together.
#include <cstddef>
#include <cstdint>

#include "util/random.hpp"

namespace xg {

// How many generators fill_u32_side_by_side advances in one SIMD step (4 with AVX2, 8 with
// AVX-512); it takes any count, but groups of this size waste no lanes.
size_t generator_lanes();

// gens[k].fill_u32(out[k], n) for every k < count: the same numbers, the generators left in the
// same states.
void fill_u32_side_by_side(Generator* gens, uint32_t* const* out, size_t count, size_t n);

}  // namespace xg
