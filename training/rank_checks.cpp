#include "training/rank_checks.hpp"

#include <fmt/format.h>

#include <cstring>
#include <string>

namespace xg::training {

namespace {

// The lowest rank for which `differs` is true, or -1: one small all-reduce.
int first_rank_where(Communicator& comm, bool differs) {
  double r = differs ? double(comm.rank()) : double(comm.size());
  comm.allreduce(&r, 1, ReduceOp::Min);
  return r < double(comm.size()) ? int(r) : -1;
}

// "--max-predictions" from the saved key "max_predictions".
std::string flag_of(const std::string& key) {
  std::string flag = "--" + key;
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

}  // namespace

void check_same_settings(Communicator& comm, const nlohmann::json& options) {
  if (!comm.distributed()) return;
  const std::string mine = options.dump();
  std::string rank0 = mine;
  comm.broadcast(rank0, 0);
  const int bad = first_rank_where(comm, rank0 != mine);
  if (bad < 0) return;
  // The differing rank names the option; its message goes to all.
  std::string message;
  if (comm.rank() == bad) {
    const nlohmann::json theirs = nlohmann::json::parse(rank0);
    std::string key, here = "(unset)", there = "(unset)";
    for (const auto& [k, v] : options.items())
      if (!theirs.contains(k) || theirs.at(k) != v) {
        key = k, here = v.dump();
        if (theirs.contains(k)) there = theirs.at(k).dump();
        break;
      }
    if (key.empty())
      for (const auto& [k, v] : theirs.items())
        if (!options.contains(k)) {
          key = k, there = v.dump();
          break;
        }
    message = fmt::format("[distributed] the ranks were started with different settings: {} is {} on rank 0 and {} on rank "
                          "{}; every rank must get the same command line", flag_of(key), there, here, bad);
  }
  comm.broadcast(message, bad);
  throw CollectiveError(message);
}

std::vector<uint64_t> parameter_checksums(const nn::ParameterArena& arena) {
  const Tensor flat = arena.flat_params();
  const auto* words = static_cast<const uint32_t*>(flat.raw_data());
  std::vector<uint64_t> sums;
  for (const auto& e : arena.entries()) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = e.offset; i < e.offset + e.numel; ++i) h = (h ^ words[i]) * 0x100000001b3ULL;
    sums.push_back(h);
  }
  return sums;
}

void check_same_parameters(Communicator& comm, const nn::ParameterArena& arena, int64_t step) {
  if (!comm.distributed()) return;
  const std::vector<uint64_t> mine = parameter_checksums(arena);
  std::vector<uint64_t> rank0 = mine;
  comm.broadcast(rank0.data(), rank0.size() * sizeof(uint64_t), 0);
  size_t first = mine.size();
  for (size_t i = 0; i < mine.size(); ++i)
    if (mine[i] != rank0[i]) {
      first = i;
      break;
    }
  const int bad = first_rank_where(comm, first < mine.size());
  if (bad < 0) return;
  std::string message;
  if (comm.rank() == bad)
    message = fmt::format("[distributed] step {}: the weights of rank {} differ from rank 0's (first: {}); the ranks "
                          "diverged and the run is stopped (a memory fault, different builds, or a non-deterministic "
                          "reduction)", step, bad, arena.entries()[first].names.front());
  comm.broadcast(message, bad);
  throw CollectiveError(message);
}

}  // namespace xg::training
