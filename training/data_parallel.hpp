#pragma once
// What the Trainer does differently on each rank of a data-parallel run, beside the gradient
// exchange (training/grad_sync.hpp): weighing each rank's loss by its share of the global batch
// and adding up the logged values over the ranks.
#include <cstdint>

#include "training/distributed.hpp"
#include "training/task.hpp"

namespace xg::training {

// This rank's share of the global batch's loss: each term's mean times count / (count over all
// ranks), summed (a batch without terms: its loss as a mean over `batch` examples). Summing the
// ranks' gradients of it gives the gradient of one batch holding all ranks' examples. The logged
// parts are weighed alike (a part without a term by 1 / ranks).
BatchLoss share_of_global_batch(Communicator& comm, BatchLoss local, size_t batch);

// Sums a step's logged values over the ranks, in place (one all-reduce).
void sum_over_ranks(Communicator& comm, double& loss, Scalars& parts, Counts& counts, double& tokens);

// The seed of a rank's dropout at `step`: each rank draws its own masks, and a resumed run draws
// the same ones without saving each rank's generator.
uint64_t rank_step_seed(uint64_t seed, int rank, int64_t step);

}  // namespace xg::training
