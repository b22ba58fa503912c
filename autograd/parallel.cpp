#include "autograd/parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "util/threads.hpp"

namespace xg {

namespace {

thread_local bool t_inside_task = false;

constexpr int kSpinIterations = 20000;  // ~50-100 us of pause instructions
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class Pool {
 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }
  int threads() const { return threads_; }
  void set_threads(int n) {
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    stop_workers();
    threads_ = n;
    start_workers();
  }

  void run(size_t n_tasks, const std::function<void(size_t)>& fn) {
    if (n_tasks == 0) return;
    if (n_tasks == 1 || threads_ == 1 || t_inside_task) {
      for (size_t t = 0; t < n_tasks; ++t) fn(t);
      return;
    }
    std::lock_guard<std::mutex> run_lock(run_mutex_);  // one parallel region at a time
    {
      // A worker that woke late for the previous job may still be leaving work(); the job
      // state must not change under it.
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [&] { return active_ == 0; });
      job_ = &fn;
      n_tasks_ = n_tasks;
      next_.store(0);
      pending_.store(n_tasks);
      error_ = nullptr;
      ++generation_;
      published_.store(generation_, std::memory_order_release);
    }
    wake_.notify_all();
    work();
    // A worker may still be on its last task. It usually ends within microseconds, and a futex
    // sleep and wake-up costs tens of them: spin first, as the workers do.
    for (int spin = 0; spin < kSpinIterations && pending_.load(std::memory_order_acquire) != 0; ++spin) cpu_relax();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_.load() == 0; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

  ~Pool() { stop_workers(); }

 private:
  Pool() : threads_(int(default_thread_count())) { start_workers(); }

  void start_workers() {
    stopping_ = false;
    try {
      for (int i = 1; i < threads_; ++i)
        workers_.push_back(start_thread("the tensor thread pool", size_t(i), size_t(threads_), [this] { worker_loop(); }));
    } catch (...) {
      // Joinable threads must not be destroyed: stop the ones started and leave a serial pool.
      stop_workers();
      threads_ = 1;
      throw;
    }
  }
  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      // Training runs parallel regions back to back; a short spin catches the next one without
      // a futex wake-up (tens of microseconds), then the worker sleeps.
      for (int spin = 0; spin < kSpinIterations && published_.load(std::memory_order_acquire) == seen; ++spin)
        cpu_relax();
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        ++active_;
      }
      work();
      std::lock_guard<std::mutex> lock(mutex_);
      --active_;
      done_.notify_all();
    }
  }

  // Claims tasks until none are left.
  void work() {
    t_inside_task = true;
    for (;;) {
      const size_t t = next_.fetch_add(1);
      if (t >= n_tasks_) break;
      try {
        (*job_)(t);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_all();
      }
    }
    t_inside_task = false;
  }

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_, mutex_;
  std::condition_variable wake_, done_;
  bool stopping_ = false;
  uint64_t generation_ = 0;
  int active_ = 0;  // workers inside work()
  std::atomic<uint64_t> published_{0};  // generation_, readable without the mutex
  const std::function<void(size_t)>* job_ = nullptr;
  size_t n_tasks_ = 0;
  std::atomic<size_t> next_{0}, pending_{0};
  std::exception_ptr error_;
};

}  // namespace

int num_threads() { return Pool::instance().threads(); }

void set_num_threads(int n) {
  if (n < 1) throw std::invalid_argument(fmt::format("[set_num_threads] {} < 1", n));
  if (n != Pool::instance().threads()) Pool::instance().set_threads(n);
}

void parallel_for(size_t n_tasks, const std::function<void(size_t)>& fn) {
  Pool::instance().run(n_tasks, fn);
}

void parallel_range(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  const size_t chunks = std::max<size_t>(1, std::min<size_t>(size_t(num_threads()), n / std::max<size_t>(grain, 1)));
  if (chunks == 1) return fn(0, n);
  parallel_for(chunks, [&](size_t c) { fn(c * n / chunks, (c + 1) * n / chunks); });
}

void parallel_rows(size_t rows, size_t cols, const std::function<void(size_t, size_t)>& fn) {
  constexpr size_t kFloatsPerTask = 16384;  // below this, threads cost more than they save
  parallel_range(rows, std::max<size_t>(1, kFloatsPerTask / std::max<size_t>(cols, 1)), fn);
}

void parallel_elements(size_t n, const std::function<void(size_t, size_t)>& fn) {
  constexpr size_t kStep = 64;
  parallel_rows((n + kStep - 1) / kStep, kStep, [&](size_t b0, size_t b1) { fn(b0 * kStep, std::min(n, b1 * kStep)); });
}

void fill_in_parallel(float* dst, size_t n, float value) {
  parallel_elements(n, [=](size_t i0, size_t i1) { std::fill(dst + i0, dst + i1, value); });
}

}  // namespace xg
