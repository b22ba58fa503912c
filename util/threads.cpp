#include "util/threads.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace xg {

namespace {
std::atomic<long> g_fail_starts_after{-1};
}

size_t default_thread_count() {
  if (const char* env = std::getenv("XGRAD_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || n < 1 || n > 1024)
      throw std::invalid_argument(
          fmt::format("XGRAD_NUM_THREADS='{}' is not a thread count between 1 and 1024", env));
    return size_t(n);
  }
  // The cores this process may run on: under mpirun --bind-to core (or taskset) a rank gets a share
  // of the machine, and a thread per core of the whole machine would oversubscribe it.
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0) return size_t(CPU_COUNT(&allowed));
  const unsigned hw = std::thread::hardware_concurrency();
  return hw ? hw : 1;
}

void fail_thread_starts_after(long n) { g_fail_starts_after = n; }

std::thread start_thread(const std::string& what, size_t index, size_t count, std::function<void()> fn) {
  try {
    // The test hook counts down to the failing start; the system's own refusal reads the same.
    if (g_fail_starts_after.load() == 0) throw std::system_error(EAGAIN, std::generic_category());
    if (g_fail_starts_after.load() > 0) --g_fail_starts_after;
    return std::thread(std::move(fn));
  } catch (const std::system_error& e) {
    throw std::runtime_error(fmt::format(
        "[threads] cannot start thread {} of {} for {}: {} (a limit on threads or processes, such as "
        "ulimit -u or a container's pids limit, is reached); use fewer threads: XGRAD_NUM_THREADS=N (it sets "
        "every pool from the start; --threads applies only once the tensor pool is made)",
        index + 1, count, what, e.code().message()));
  }
}

void run_on_threads(size_t threads, const std::function<void(size_t)>& fn, const std::string& what) {
  if (threads <= 1) return fn(0);
  std::vector<std::exception_ptr> errors(threads);
  auto guarded = [&](size_t t) {
    try {
      fn(t);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  try {
    for (size_t t = 1; t < threads; ++t) pool.push_back(start_thread(what, t, threads, [&guarded, t] { guarded(t); }));
  } catch (...) {
    // A joinable std::thread destroyed unjoined ends the process: finish the started ones first.
    for (auto& th : pool) th.join();
    throw;
  }
  guarded(0);
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace xg
