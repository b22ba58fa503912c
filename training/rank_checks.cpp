#include "training/rank_checks.hpp"

#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <string>

#include "util/strings.hpp"

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

// Every rank throws a CollectiveError with `message` as rank `from` has it.
[[noreturn]] void throw_from(Communicator& comm, int from, std::string message) {
  comm.broadcast(message, from);
  throw CollectiveError(message);
}

// Throws on every rank unless every rank's `mine` equals rank 0's: the first rank that differs
// words the message with `describe(rank 0's text, that rank)`, and it goes to all.
void refuse_unless_same(Communicator& comm, const std::string& mine,
                        const std::function<std::string(const std::string& rank0, int rank)>& describe) {
  std::string rank0 = mine;
  comm.broadcast(rank0, 0);
  const int bad = first_rank_where(comm, rank0 != mine);
  if (bad < 0) return;
  throw_from(comm, bad, comm.rank() == bad ? describe(rank0, bad) : std::string());
}

}  // namespace

void fail_together(Communicator& comm, const std::function<void()>& work) {
  if (!comm.distributed()) return work();
  bool threw = true;
  std::string error = "[distributed] an error that is not a std::exception";
  try {
    work();
    threw = false;
  } catch (const CollectiveError&) {
    throw;  // every rank has it already: it came out of an agreement inside `work`
  } catch (const std::exception& e) {
    if (*e.what()) error = e.what();
  } catch (...) {  // still joins the all-reduce below, or the others would wait in it
  }
  const int failed = first_rank_where(comm, threw);
  if (failed < 0) return;
  throw_from(comm, failed, failed == 0 ? error : fmt::format("rank {}: {}", failed, error));
}

void check_same_settings(Communicator& comm, const nlohmann::json& options) {
  if (!comm.distributed()) return;
  refuse_unless_same(comm, options.dump(), [&](const std::string& rank0, int bad) {
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
    const std::string suffix = "_fingerprint";
    const bool data = key.size() > suffix.size() && ends_with(key, suffix);
    return data ? fmt::format("[distributed] {} names different data on rank 0 and on rank {} (fingerprint {} on rank 0, "
                              "{} on rank {}): every rank must read the same files",
                              flag_of(key.substr(0, key.size() - suffix.size())), bad, there, here, bad)
                : fmt::format("[distributed] the ranks were started with different settings: {} is {} on rank 0 and {} "
                              "on rank {}; every rank must get the same command line", flag_of(key), there, here, bad);
  });
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

namespace {
// Throws on every rank when the ranks' parameters differ in number, names or sizes (the
// checksums are compared entry by entry, and the gradient buckets are cut by size).
void check_same_layout(Communicator& comm, const nn::ParameterArena& arena) {
  std::vector<std::string> entries;
  for (const auto& e : arena.entries()) entries.push_back(fmt::format("{} ({} elements)", e.names.front(), e.numel));
  refuse_unless_same(comm, nlohmann::json(entries).dump(), [&](const std::string& rank0, int bad) {
    const auto theirs = nlohmann::json::parse(rank0).get<std::vector<std::string>>();
    size_t i = 0;
    while (i < entries.size() && i < theirs.size() && entries[i] == theirs[i]) ++i;
    const auto at = [i](const std::vector<std::string>& v) { return i < v.size() ? v[i] : std::string("nothing"); };
    return fmt::format("[distributed] the ranks built different models: parameter {} is {} on rank 0 and {} on rank {}; "
                       "every rank must read the same --model, --init-from and tokenizer files",
                       i, at(theirs), at(entries), bad);
  });
}
}  // namespace

void check_same_parameters(Communicator& comm, const nn::ParameterArena& arena, int64_t step) {
  if (!comm.distributed()) return;
  check_same_layout(comm, arena);
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
  if (comm.rank() == bad && step < 0)
    message = fmt::format("[distributed] the ranks start from different weights: {} differs between rank 0 and rank {}; "
                          "every rank must read the same --model, --init-from and --resume-from-checkpoint files, with the same build",
                          arena.entries()[first].names.front(), bad);
  else if (comm.rank() == bad)
    message = fmt::format("[distributed] step {}: the weights of rank {} differ from rank 0's (first: {}); the ranks "
                          "diverged and the run is stopped (a memory fault, different builds, or a non-deterministic "
                          "reduction)", step, bad, arena.entries()[first].names.front());
  comm.broadcast(message, bad);
  throw CollectiveError(message);
}

}  // namespace xg::training
