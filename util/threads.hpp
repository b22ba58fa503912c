#pragma once
// Thread counts and thread starts shared by every layer, and a plain fan-out for code below the
// autograd layer (text/), which has no thread pool of its own.
#include <cstddef>
#include <functional>
#include <string>
#include <thread>

namespace xg {

// XGRAD_NUM_THREADS when set (1..1024; anything else throws), else the cores this process may
// run on, else the hardware's count.
size_t default_thread_count();

// Starts a thread running fn, thread `index` of `count` started for `what`. When the system
// refuses (std::system_error: a limit on threads or processes such as ulimit -u or a container's
// pids limit) it throws std::runtime_error saying what was being started, how many threads and
// how to ask for fewer.
std::thread start_thread(const std::string& what, size_t index, size_t count, std::function<void()> fn);

// Runs fn(t) for t in [0, threads) on that many threads, the caller being thread 0; returns when
// all are done and rethrows the first exception any of them threw. `what` names the work in the
// error when a thread cannot be started.
void run_on_threads(size_t threads, const std::function<void(size_t)>& fn, const std::string& what = "parallel work");

// For tests: from the n-th start_thread call on (counting from 0), fail as the system does when
// out of threads; -1 (the default) never fails.
void fail_thread_starts_after(long n);

}  // namespace xg
