#include "serve/batcher.hpp"

#include <algorithm>

#include "serve/metrics.hpp"

namespace xg::serve {

Batcher::Batcher(const BatcherOptions& options, Metrics* metrics) : options_(options), metrics_(metrics) {
  worker_ = std::thread([this] { work(); });
}

Batcher::~Batcher() { stop(); }

Batcher::Announcement::Announcement(Batcher& b) : batcher_(b) {
  std::lock_guard<std::mutex> lock(batcher_.mutex_);
  ++batcher_.announced_;
}

Batcher::Announcement::~Announcement() {
  if (!pending_) return;
  std::lock_guard<std::mutex> lock(batcher_.mutex_);
  --batcher_.announced_;
  batcher_.changed_.notify_all();  // a worker waiting for this request stops waiting
}

bool Batcher::Announcement::submit(const std::shared_ptr<Job>& job) {
  std::lock_guard<std::mutex> lock(batcher_.mutex_);
  if (pending_) --batcher_.announced_;
  pending_ = false;
  const bool queued = batcher_.submit_locked(job);
  batcher_.changed_.notify_all();
  return queued;
}

bool Batcher::submit(const std::shared_ptr<Job>& job) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool queued = submit_locked(job);
  changed_.notify_all();
  return queued;
}

bool Batcher::submit_locked(const std::shared_ptr<Job>& job) {
  if (stopping_ || queue_.size() >= options_.max_queue) return false;
  job->queued = std::chrono::steady_clock::now();
  queue_.push_back(job);
  return true;
}

size_t Batcher::depth() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void Batcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

std::vector<std::shared_ptr<Job>> Batcher::next_batch(std::unique_lock<std::mutex>& lock) {
  changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
  if (queue_.empty()) return {};
  const std::string group = queue_.front()->group;
  const auto queued_tokens = [&] {
    size_t n = 0;
    for (const auto& j : queue_)
      if (j->group == group) n += j->tokens;
    return n;
  };
  // Room left and requests on their way: wait for them, but not past the oldest job's deadline.
  const auto deadline = queue_.front()->queued + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                     std::chrono::duration<double, std::milli>(options_.max_wait_ms));
  while (!stopping_ && announced_ > 0 && queued_tokens() < options_.max_batch_tokens &&
         std::chrono::steady_clock::now() < deadline)
    changed_.wait_until(lock, deadline);
  // The oldest job, then later ones of its group in arrival order while they fit.
  std::vector<std::shared_ptr<Job>> batch;
  size_t tokens = 0;
  for (auto it = queue_.begin(); it != queue_.end();) {
    const bool fits = batch.empty() || tokens + (*it)->tokens <= options_.max_batch_tokens;
    if ((*it)->group == group && fits) {
      tokens += (*it)->tokens;
      batch.push_back(*it);
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  return batch;
}

void Batcher::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const std::vector<std::shared_ptr<Job>> batch = next_batch(lock);
    if (batch.empty()) return;
    lock.unlock();
    run(batch);
    lock.lock();
  }
}

void Batcher::run(const std::vector<std::shared_ptr<Job>>& batch) {
  // By length: runners that pad pad less, and each job's results do not depend on its neighbours.
  std::vector<Job*> jobs;
  size_t sequences = 0, tokens = 0;
  for (const auto& j : batch) {
    jobs.push_back(j.get());
    sequences += j->sequences;
    tokens += j->tokens;
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job* a, const Job* b) { return a->tokens < b->tokens; });
  const auto start = std::chrono::steady_clock::now();
  try {
    jobs.front()->run_batch(jobs);
  } catch (...) {
    if (jobs.size() == 1) {
      jobs.front()->error = std::current_exception();
    } else {
      for (Job* j : jobs) try {  // each alone: the one that cannot run fails by itself
          j->run_batch({j});
        } catch (...) {
          j->error = std::current_exception();
        }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (metrics_) metrics_->batch(sequences, tokens, seconds);
  for (Job* j : jobs) j->done.set_value();
}

}  // namespace xg::serve
