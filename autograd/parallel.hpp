#pragma once
// A small persistent thread pool. The thread count comes from XGRAD_NUM_THREADS, else the
// hardware; set_num_threads() overrides both at run time.
#include <cstddef>
#include <functional>

namespace xg {

int num_threads();
// n >= 1; takes effect for the next parallel_for.
void set_num_threads(int n);

// Runs fn(task) for every task in [0, n_tasks) on up to num_threads() threads (the caller works
// too) and returns when all are done. Rethrows the first exception a task threw. Called from
// inside a task, it runs serially on that thread.
void parallel_for(size_t n_tasks, const std::function<void(size_t)>& fn);

// Splits [0, n) into contiguous chunks of at least `grain` items and runs fn(begin, end) on each,
// in parallel when there is more than one chunk.
void parallel_range(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);

// parallel_range over the rows of a (rows, cols) matrix, in chunks of about 16K floats: enough
// work per task to pay for handing it out.
void parallel_rows(size_t rows, size_t cols, const std::function<void(size_t, size_t)>& fn);

// parallel_rows over n elements of an element-wise kernel: chunks start at multiples of 64
// elements, so a SIMD kernel's scalar tail only ever takes the last elements of the whole range
// and every element gets the same bits for any thread count.
void parallel_elements(size_t n, const std::function<void(size_t, size_t)>& fn);

// dst[0, n) = value on the thread pool (a gradient arena or a vocabulary table is megabytes).
void fill_in_parallel(float* dst, size_t n, float value);

}  // namespace xg
