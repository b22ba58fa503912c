#pragma once
// Plain fan-out for code below the autograd layer (text/), which has no thread pool of its own.
#include <cstddef>
#include <functional>

namespace xg {

// Runs fn(t) for t in [0, threads) on that many threads, the caller being thread 0; returns when
// all are done and rethrows the first exception any of them threw.
void run_on_threads(size_t threads, const std::function<void(size_t)>& fn);

}  // namespace xg
