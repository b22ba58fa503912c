#pragma once
// Tests that change the tensor pool's thread count put it back through this guard, so that a
// failed REQUIRE (which throws) does not leave the next test on another count.
#include "autograd/parallel.hpp"

struct RestoreThreads {
  int threads = xg::num_threads();
  RestoreThreads() = default;
  RestoreThreads(const RestoreThreads&) = delete;
  RestoreThreads& operator=(const RestoreThreads&) = delete;
  ~RestoreThreads() {
    try {
      xg::set_num_threads(threads);
    } catch (...) {  // a refused thread start: the next test runs on fewer threads, no terminate()
    }
  }
};
