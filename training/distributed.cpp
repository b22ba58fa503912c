#include "training/distributed.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <limits>
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
};

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
}

Communicator::~Communicator() {
  if (!mpi_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Comm& c : pending_->channels)
    if (c != MPI_COMM_WORLD) MPI_Comm_free(&c);
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
}  // namespace

void Communicator::allreduce(float* data, size_t n, ReduceOp op) {
  if (!mpi_ || size_ == 1 || n == 0) return;
  check(MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(n, "MPI_Allreduce"), MPI_FLOAT, mpi_op(op), MPI_COMM_WORLD), "MPI_Allreduce");
}
void Communicator::allreduce(double* data, size_t n, ReduceOp op) {
  if (!mpi_ || size_ == 1 || n == 0) return;
  check(MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(n, "MPI_Allreduce"), MPI_DOUBLE, mpi_op(op), MPI_COMM_WORLD), "MPI_Allreduce");
}

void Communicator::broadcast(void* data, size_t bytes, int root) {
  if (!mpi_ || size_ == 1 || bytes == 0) return;
  check(MPI_Bcast(data, mpi_count(bytes, "MPI_Bcast"), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
}
void Communicator::broadcast(std::string& data, int root) {
  if (!mpi_ || size_ == 1) return;
  uint64_t n = data.size();
  broadcast(&n, sizeof n, root);
  data.resize(n);
  broadcast(data.data(), n, root);
}

void Communicator::barrier() {
  if (mpi_ && size_ > 1) check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
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
  check(MPI_Waitall(int(pending_->list.size()), pending_->list.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  pending_->list.clear();
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
