#include "util/threads.hpp"

#include <exception>
#include <thread>
#include <vector>

namespace xg {

void run_on_threads(size_t threads, const std::function<void(size_t)>& fn) {
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
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(guarded, t);
  guarded(0);
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace xg
