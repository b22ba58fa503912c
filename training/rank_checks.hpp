#pragma once
// Checks that the ranks of a data-parallel run agree: the same settings at the start, the same
// weights every few steps; and fail_together, which turns an error that one rank meets while
// setting up into an error on every rank. Each throws CollectiveError on every rank together, so
// the run ends cleanly with one message.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>

#include "nn/arena.hpp"
#include "training/distributed.hpp"

namespace xg::training {

// `options` are a rank's options by json key: as given (run control included: --resume, --stop-at
// differing would leave ranks waiting in different collectives), or as saved (the
// Trainer's and the task's Restore options with the data's fingerprints: a run whose ranks differ
// in one would train something none of them asked for). Refuses, naming the first differing
// option (or the data flag whose files differ) and its values on rank 0 and on the first rank that
// differs.
void check_same_settings(Communicator& comm, const nlohmann::json& options);

// Compares the parameters' names and sizes, then a checksum of each (its bytes: the ranks must
// agree bit for bit, as each applies the same update to the same weights) across ranks; at a
// difference throws naming the first parameter that differs and the rank. `step` < 0: before the
// first step of a run (the ranks loaded different files); else the step at which they diverged.
void check_same_parameters(Communicator& comm, const nn::ParameterArena& arena, int64_t step);

// Runs `work` on every rank, then one all-reduce in which each says whether it threw. If one did,
// every rank throws a CollectiveError with the message of the lowest failing rank (prefixed
// "rank N: " for N > 0), so that all of them end cleanly together: otherwise the others would wait
// in their next collective until MPI_Abort ended the job.
// `work` may run fail_together itself: a rank that failed before that inner agreement meets the
// others in it (both are the same collectives), and the CollectiveError the inner agreement throws
// passes through this one unchanged.
// So:
// - `work` may throw a CollectiveError only out of such an agreement (or another collective check
//   every rank is sure to reach): a rank that threw one of its own would skip this agreement while
//   the others waited in it. Its own errors are plain exceptions.
// - Whether a rank enters an inner agreement (other than by failing before it) must not depend on
//   anything the ranks have not agreed on: a rank that skipped it would pair its all-reduce here
//   with the others' in the inner agreement, and the ranks would go on out of step (a hang).
// - Any other collective in `work` must be one that every rank is sure to reach, as a broadcast
//   straight after such an agreement is: a rank that failed before it would sit in this agreement
//   while the others sat in that collective.
// Not distributed: runs `work` and lets its exception through unchanged.
void fail_together(Communicator& comm, const std::function<void()>& work);

// FNV-1a over the float32 words of each entry of the arena, in entry order.
std::vector<uint64_t> parameter_checksums(const nn::ParameterArena& arena);

}  // namespace xg::training
