#pragma once
// Dynamic batching: requests handled on many connection threads queue their work here, and one
// worker thread, which owns the model, runs queued work of the same kind together in one
// forward pass per batch. A batch takes the oldest job, then later jobs of its group in arrival
// order while their tokens fit in max_batch_tokens. While a batch has room and more requests are
// being read and tokenized (announced, not yet queued), the worker waits for them up to
// max_wait_ms after the oldest job arrived; a lone request never waits.
//
// A batch that fails is run again one job at a time, so a job that cannot run fails alone and
// never takes other clients' requests with it.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace xg::serve {

class Metrics;

// One request's work. Subclasses hold its inputs and, once run, its results.
struct Job {
  virtual ~Job() = default;
  // Jobs run together only within a group: the endpoint and the options that change the model's
  // work ("embed mean normalized"); a batch is one call of the group's runner.
  std::string group;
  size_t sequences = 0, tokens = 0;
  // Runs a batch of jobs of this job's group, filling each one's results; throws when it cannot.
  std::function<void(const std::vector<Job*>&)> run_batch;

  std::exception_ptr error;  // set when the job failed
  std::promise<void> done;
  std::chrono::steady_clock::time_point queued;
};

struct BatcherOptions {
  size_t max_batch_tokens = 16384;  // real tokens per batch (a job larger than this runs alone)
  double max_wait_ms = 5;           // how long a batch with room may wait for announced requests
  size_t max_queue = 512;           // jobs waiting; more are refused (HTTP 503)
};

class Batcher {
 public:
  Batcher(const BatcherOptions& options, Metrics* metrics = nullptr);
  ~Batcher();  // stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // A request is being read and prepared, and will submit a job (or withdraw): worth waiting for.
  // The guard withdraws its announcement when it ends.
  class Announcement {
   public:
    explicit Announcement(Batcher& b);
    ~Announcement();
    Announcement(const Announcement&) = delete;
    Announcement& operator=(const Announcement&) = delete;
    // Queues the job (the announcement ends); false when the queue is full or the batcher stopped.
    bool submit(const std::shared_ptr<Job>& job);

   private:
    Batcher& batcher_;
    bool pending_ = true;
  };

  // Queues the job; false (and nothing queued) when max_queue jobs wait or the batcher stopped.
  bool submit(const std::shared_ptr<Job>& job);
  // Jobs waiting now.
  size_t depth() const;
  // Runs every queued job, then ends the worker. Later submits are refused.
  void stop();

 private:
  void work();
  // The next batch, taken off the queue; empty when stopping with nothing queued.
  std::vector<std::shared_ptr<Job>> next_batch(std::unique_lock<std::mutex>& lock);
  void run(const std::vector<std::shared_ptr<Job>>& batch);
  bool submit_locked(const std::shared_ptr<Job>& job);

  BatcherOptions options_;
  Metrics* metrics_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Job>> queue_;
  size_t announced_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace xg::serve
