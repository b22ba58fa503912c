#pragma once
// Checks that the ranks of a data-parallel run agree: the same settings at the start, the same
// weights every few steps. Each throws CollectiveError on every rank together, so the run ends
// cleanly with one message.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "nn/arena.hpp"
#include "training/distributed.hpp"

namespace xg::training {

// `options` are a rank's saved options (the Trainer's and the task's Restore options, by json
// key): a run whose ranks differ in one would train something none of them asked for. Refuses,
// naming the first differing option and its values on rank 0 and on the first rank that differs.
void check_same_settings(Communicator& comm, const nlohmann::json& options);

// Compares a checksum of every parameter (its bytes: the ranks must agree bit for bit, as each
// applies the same update to the same weights) across ranks; at a difference throws naming the
// first parameter that differs, the rank and `step`.
void check_same_parameters(Communicator& comm, const nn::ParameterArena& arena, int64_t step);

// FNV-1a over the float32 words of each entry of the arena, in entry order.
std::vector<uint64_t> parameter_checksums(const nn::ParameterArena& arena);

}  // namespace xg::training
