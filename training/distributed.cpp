#include "training/distributed.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <array>
#include <list>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#ifdef XGRAD_WITH_MPI
#include <mpi.h>
#endif

namespace xg::training {

bool Communicator::launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

Communicator& Communicator::world() {
  static Communicator w;  // finalised by its destructor at exit, after every rank's last collective
  return w;
}

#ifdef XGRAD_WITH_MPI

struct Communicator::Requests {
  std::vector<MPI_Request> list;
  std::vector<MPI_Comm> channels;  // duplicates of MPI_COMM_WORLD; channel 0 is the world itself
  MPI_Comm heartbeat = MPI_COMM_NULL;  // the watchdog's questions and answers, apart from the training's traffic
};

namespace {
// The watchdog's messages sent and not yet delivered, each with its buffer (which MPI reads until
// then); a stopped rank never receives those sent to it.
struct Sends {
  std::list<std::pair<MPI_Request, std::array<uint64_t, 2>>> pending;
  void post(uint64_t a, uint64_t b, int to, int tag, MPI_Comm heartbeat) {
    pending.remove_if([](auto& s) {
      int done = 0;
      MPI_Test(&s.first, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
    auto& s = pending.emplace_back(MPI_REQUEST_NULL, std::array<uint64_t, 2>{a, b});
    MPI_Isend(s.second.data(), 2, MPI_UINT64_T, to, tag, heartbeat, &s.first);
  }
};
Sends& watchdog_sends() {
  static Sends sends;
  return sends;
}
}  // namespace

namespace {
void check(int rc, const char* call) {
  // MPI_ERRORS_ARE_FATAL (the default) aborts before an error code comes back; this guards a
  // library configured otherwise.
  if (rc != MPI_SUCCESS) throw std::runtime_error(fmt::format("[distributed] {} failed with MPI error {}", call, rc));
}
MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Sum: break;
  }
  return MPI_SUM;
}
}  // namespace

Communicator::Communicator() : pending_(std::make_unique<Requests>()) {
  if (!launched_by_mpi()) return;
  int provided = 0;
  // FUNNELED: only the main thread calls MPI; the worker threads only compute.
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  mpi_ = true;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  if (size_ > 1) check(MPI_Comm_dup(MPI_COMM_WORLD, &pending_->heartbeat), "MPI_Comm_dup");
}

Communicator::~Communicator() {
  if (!mpi_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Comm& c : pending_->channels)
    if (c != MPI_COMM_WORLD) MPI_Comm_free(&c);
  if (pending_->heartbeat != MPI_COMM_NULL) MPI_Comm_free(&pending_->heartbeat);
  MPI_Finalize();
}

namespace {
// MPI counts are ints: a larger count would wrap (MPI_ERR_COUNT, or a part of the data reduced).
int mpi_count(size_t n, const char* call) {
  if (n > size_t(std::numeric_limits<int>::max()))
    throw std::length_error(fmt::format("[distributed] {} of {} elements: MPI counts stop at {} (use a smaller --bucket-mb)",
                                        call, n, std::numeric_limits<int>::max()));
  return int(n);
}

// The watchdog's messages on the heartbeat communicator: a question (are you alive?) carrying its
// number, and its answer: that number and the collectives the answering rank has waited for.
constexpr int kQuestionTag = 1, kAnswerTag = 2;

// Handles the watchdog's messages waiting for this rank: answers each question with `collectives`,
// and notes in `answers` (rank -> the collectives it has waited for) the answers to question
// `asked`; other answers (late ones to an earlier question) are dropped.
void handle_heartbeats(MPI_Comm heartbeat, uint64_t collectives, uint64_t asked, std::map<int, uint64_t>* answers) {
  for (;;) {
    int waiting = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, heartbeat, &waiting, &status);
    if (!waiting) return;
    uint64_t message[2] = {0, 0};
    MPI_Recv(message, 2, MPI_UINT64_T, status.MPI_SOURCE, status.MPI_TAG, heartbeat, MPI_STATUS_IGNORE);
    if (status.MPI_TAG == kQuestionTag) {
      watchdog_sends().post(message[0], collectives, status.MPI_SOURCE, kAnswerTag, heartbeat);
    } else if (answers && message[0] == asked) {
      (*answers)[status.MPI_SOURCE] = message[1];
    }
  }
}

// Polling pauses: spin for the first 50 us (a step's all-reduce), then yield for a second (MPI
// moves data only inside its calls), then sleep a little between polls, so that a long wait (rank
// 0 evaluating) leaves the cores to the threads that work.
void pause_after(double waited_s) {
  if (waited_s < 50e-6) return;
  if (waited_s < 1) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(200));
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

void Communicator::wait(Requests& requests, const char* what) {
  auto start = std::chrono::steady_clock::now();
  ++collectives_;
  for (;;) {
    int done = 0;
    check(MPI_Testall(int(requests.list.size()), requests.list.data(), &done, MPI_STATUSES_IGNORE), what);
    if (done) break;
    handle_heartbeats(requests.heartbeat, collectives_, 0, nullptr);
    const double waited = seconds_since(start);
    if (timeout_s_ > 0 && waited > timeout_s_) {
      const std::optional<std::string> why = why_stalled(requests, what);
      if (!why) {  // completed while the others were asked, or every rank is in this collective: only slow
        start = std::chrono::steady_clock::now();
        continue;
      }
      fmt::print(stderr, "[distributed] rank {}: waited {:.0f} s in {} (collective {}): {}; ending the job (the last "
                 "checkpoint is intact)\n", rank_, waited, what, collectives_, *why);
      std::fflush(stderr);
      abort(1);
    }
    pause_after(waited);
  }
  requests.list.clear();
}

std::optional<std::string> Communicator::why_stalled(Requests& requests, const char* what) {
  ++questions_;
  for (int r = 0; r < size_; ++r)
    if (r != rank_) watchdog_sends().post(questions_, collectives_, r, kQuestionTag, requests.heartbeat);
  std::map<int, uint64_t> answers;  // the ranks waiting in a collective answer at once
  const auto asked = std::chrono::steady_clock::now();
  while (seconds_since(asked) < kAnswerSeconds && answers.size() + 1 < size_t(size_)) {
    int done = 0;
    check(MPI_Testall(int(requests.list.size()), requests.list.data(), &done, MPI_STATUSES_IGNORE), what);
    if (done) return std::nullopt;
    handle_heartbeats(requests.heartbeat, collectives_, questions_, &answers);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::string silent, alive;
  bool all_here = true;  // every rank waits in the collective this one waits in
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    if (!answers.count(r)) silent += fmt::format("{}{}", silent.empty() ? "" : ", ", r);
    else alive += fmt::format("{}rank {} at its collective {}", alive.empty() ? "" : ", ", r, answers.at(r));
    all_here = all_here && answers.count(r) && answers.at(r) == collectives_;
  }
  if (silent.empty() && all_here) return std::nullopt;
  if (silent.empty())
    return fmt::format("every rank answers ({}; this one is at {}), but the collective has not completed: the ranks wait "
                       "in different collectives", alive, collectives_);
  return fmt::format("rank(s) {} did not answer within {:.0f} s: stopped, hung, or busy outside any collective for longer "
                     "than --collective-timeout (raise it for long evaluations)", silent, kAnswerSeconds);
}

// A blocking collective: `start` begins it (MPI_I...), then the watchdog's wait.
template <class Start>
void Communicator::blocking(const char* what, Start start) {
  Requests one;
  one.heartbeat = pending_->heartbeat;
  MPI_Request r;
  check(start(&r), what);
  one.list.push_back(r);
  wait(one, what);
}

void Communicator::allreduce(float* data, size_t n, ReduceOp op) {
  if (!mpi_ || size_ == 1 || n == 0) return;
  blocking("MPI_Allreduce", [&](MPI_Request* r) {
    return MPI_Iallreduce(MPI_IN_PLACE, data, mpi_count(n, "MPI_Allreduce"), MPI_FLOAT, mpi_op(op), MPI_COMM_WORLD, r);
  });
}
void Communicator::allreduce(double* data, size_t n, ReduceOp op) {
  if (!mpi_ || size_ == 1 || n == 0) return;
  blocking("MPI_Allreduce", [&](MPI_Request* r) {
    return MPI_Iallreduce(MPI_IN_PLACE, data, mpi_count(n, "MPI_Allreduce"), MPI_DOUBLE, mpi_op(op), MPI_COMM_WORLD, r);
  });
}

void Communicator::broadcast(void* data, size_t bytes, int root) {
  if (!mpi_ || size_ == 1 || bytes == 0) return;
  blocking("MPI_Bcast", [&](MPI_Request* r) {
    return MPI_Ibcast(data, mpi_count(bytes, "MPI_Bcast"), MPI_BYTE, root, MPI_COMM_WORLD, r);
  });
}
void Communicator::broadcast(std::string& data, int root) {
  if (!mpi_ || size_ == 1) return;
  uint64_t n = data.size();
  broadcast(&n, sizeof n, root);
  data.resize(n);
  broadcast(data.data(), n, root);
}

void Communicator::barrier() {
  if (!mpi_ || size_ == 1) return;
  blocking("MPI_Barrier", [&](MPI_Request* r) { return MPI_Ibarrier(MPI_COMM_WORLD, r); });
}

void Communicator::reserve_channels(size_t count) {
  if (!mpi_ || size_ == 1) return;
  auto& channels = pending_->channels;
  if (channels.empty()) channels.push_back(MPI_COMM_WORLD);
  while (channels.size() < count) {
    MPI_Comm c;
    check(MPI_Comm_dup(MPI_COMM_WORLD, &c), "MPI_Comm_dup");
    channels.push_back(c);
  }
}

void Communicator::start_allreduce(float* data, size_t n, size_t channel) {
  if (!mpi_ || size_ == 1 || n == 0) return;
  if (channel > 0 && channel >= pending_->channels.size())
    throw std::logic_error(fmt::format("[distributed] all-reduce on channel {}, but only {} reserved", channel,
                                       pending_->channels.size()));
  MPI_Comm comm = channel == 0 ? MPI_COMM_WORLD : pending_->channels[channel];
  MPI_Request r;
  check(MPI_Iallreduce(MPI_IN_PLACE, data, mpi_count(n, "MPI_Iallreduce"), MPI_FLOAT, MPI_SUM, comm, &r), "MPI_Iallreduce");
  pending_->list.push_back(r);
}
void Communicator::progress() {
  if (pending_->list.empty()) return;
  int done = 0;
  check(MPI_Testall(int(pending_->list.size()), pending_->list.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
  if (done) pending_->list.clear();
}
void Communicator::wait_all() {
  if (pending_->list.empty()) return;
  wait(*pending_, "MPI_Waitall (the gradients' all-reduce)");
}

void Communicator::abort(int code) {
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

#else  // built without MPI: always the group of one

struct Communicator::Requests {};

Communicator::Communicator() : pending_(std::make_unique<Requests>()) {
  if (launched_by_mpi())
    throw std::runtime_error("[distributed] started by an MPI launcher, but this build has no MPI (install libopenmpi-dev "
                             "and reconfigure)");
}
Communicator::~Communicator() = default;
void Communicator::allreduce(float*, size_t, ReduceOp) {}
void Communicator::allreduce(double*, size_t, ReduceOp) {}
void Communicator::broadcast(void*, size_t, int) {}
void Communicator::broadcast(std::string&, int) {}
void Communicator::barrier() {}
void Communicator::reserve_channels(size_t) {}
void Communicator::start_allreduce(float*, size_t, size_t) {}
void Communicator::progress() {}
void Communicator::wait_all() {}
void Communicator::abort(int code) { std::_Exit(code); }

#endif

}  // namespace xg::training
