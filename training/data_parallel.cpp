#include "training/data_parallel.hpp"

#include <algorithm>
#include <vector>

#include "autograd/ops.hpp"

namespace xg::training {

BatchLoss share_of_global_batch(Communicator& comm, BatchLoss local, size_t batch) {
  if (local.terms.empty()) local.terms.push_back({"", local.loss, double(batch)});
  std::vector<double> global(local.terms.size());
  for (size_t k = 0; k < global.size(); ++k) global[k] = local.terms[k].count;
  comm.allreduce(global.data(), global.size());
  Tensor share;
  for (size_t k = 0; k < global.size(); ++k) {
    const LossTerm& t = local.terms[k];
    if (t.count == 0) {  // a mean over nothing (a rank without masked tokens) adds nothing, logged part included
      for (auto& [name, value] : local.parts)
        if (name == t.name) value = 0.0;
      continue;
    }
    const float weight = float(t.count / global[k]);
    const Tensor part = mul(t.mean, Tensor::scalar(weight));
    share = share.defined() ? add(share, part) : part;
    for (auto& [name, value] : local.parts)
      if (name == t.name) value *= double(weight);
  }
  for (auto& [name, value] : local.parts) {
    const bool has_term = std::any_of(local.terms.begin(), local.terms.end(), [&n = name](const LossTerm& t) { return t.name == n; });
    if (!has_term) value /= double(comm.size());
  }
  // Every term empty on this rank: a zero that still reaches the parameters' hooks.
  local.loss = share.defined() ? share : mul(local.loss, Tensor::scalar(0.f));
  return local;
}

void sum_over_ranks(Communicator& comm, double& loss, Scalars& parts, Counts& counts, double& tokens) {
  std::vector<double> v = {loss, tokens};
  for (const auto& p : parts) v.push_back(p.second);
  for (const auto& c : counts) v.push_back(c.second);  // std::map: the same key order on every rank
  comm.allreduce(v.data(), v.size());
  loss = v[0], tokens = v[1];
  size_t i = 2;
  for (auto& p : parts) p.second = v[i++];
  for (auto& c : counts) c.second = v[i++];
}

uint64_t rank_step_seed(uint64_t seed, int rank, int64_t step) {
  // splitmix64 of the three: nearby seeds, ranks and steps give unrelated streams
  uint64_t z = seed ^ (uint64_t(rank) << 48) ^ (uint64_t(step) * 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace xg::training
