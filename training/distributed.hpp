#pragma once
// The process group a run trains in (MLX's distributed.h: one interface with a singleton
// default). Started by mpirun (or srun: the launcher's environment says so), the group is MPI's
// world, initialised on first use and finalised at exit; started plainly, it is a group of one
// whose collectives return at once, and MPI is never touched (a plain run costs nothing, and a
// build without MPI has only this group).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace xg::training {

// An error every rank raises at the same point with the same message (a configuration mismatch,
// diverged weights): the ranks end together, without MPI_Abort.
struct CollectiveError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class ReduceOp { Sum, Max, Min };

class Communicator {
 public:
  // The world group of this process (MPI initialised on the first call when under a launcher).
  static Communicator& world();
  // True when the environment shows an MPI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK).
  static bool launched_by_mpi();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }

  // In place over all ranks, every rank receiving the result.
  void allreduce(float* data, size_t n, ReduceOp op = ReduceOp::Sum);
  void allreduce(double* data, size_t n, ReduceOp op = ReduceOp::Sum);
  // `data` of rank `root` to every rank (resized there).
  void broadcast(std::string& data, int root = 0);
  void broadcast(void* data, size_t bytes, int root = 0);
  void barrier();

  // A non-blocking in-place float sum: start it, then wait_all() before reading the data.
  // progress() lets the library move started reductions on (MPI progresses only inside calls).
  // Reductions on one channel match across ranks in the order they start; on different channels
  // they match by channel, whatever order each rank starts them in (gradient buckets: a rank that
  // does not reach a parameter starts its bucket later than the others). Channel 0 is the world
  // communicator, which the blocking calls above use too; channels 1 to count - 1 are copies of
  // it, made by reserve_channels: a collective, so every rank calls it with the same count at the
  // same point.
  void reserve_channels(size_t count);
  void start_allreduce(float* data, size_t n, size_t channel = 0);
  void progress();
  void wait_all();

  // Ends the whole job (every rank) after an error only this rank saw: the others would wait in
  // a collective forever.
  [[noreturn]] void abort(int code);

  // The watchdog: a rank that has waited this long in one collective asks every other rank whether
  // it is alive (ranks answer while they wait in a collective), and ends the job with a message
  // naming those that do not answer within kAnswerSeconds (a rank stopped, hung, or busy outside
  // any collective for longer than this). 0: wait forever.
  void set_collective_timeout(double seconds) { timeout_s_ = seconds; }
  static constexpr double kDefaultCollectiveTimeout = 1800;
  static constexpr double kAnswerSeconds = 10;

  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

 private:
  Communicator();
  struct Requests;  // MPI_Request handles of started reductions (no mpi.h in this header)
  // Waits for the requests of `what` (an MPI call's name), with the watchdog.
  void wait(Requests& requests, const char* what);
  // Past the timeout: asks the other ranks whether they are alive; why the collective has not
  // completed, or nothing when it completed meanwhile or every rank waits in it (only slow).
  std::optional<std::string> why_stalled(Requests& requests, const char* what);
  template <class Start>
  void blocking(const char* what, Start start);  // distributed.cpp
  int rank_ = 0, size_ = 1;
  bool mpi_ = false;
  double timeout_s_ = kDefaultCollectiveTimeout;
  uint64_t collectives_ = 0;  // collectives waited for, for the watchdog's message
  uint64_t questions_ = 0;    // the watchdog's questions asked, each answer naming its own
  std::unique_ptr<Requests> pending_;
};

}  // namespace xg::training
