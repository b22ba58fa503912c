// The CPU's arithmetic peaks, measured: a loop of independent FMAs on registers (fp32, the widest
// vectors this build targets), where the CPU has AVX512-BF16 of vdpbf16ps (bf16 pairs summed
// into fp32), and where it has AVX512-VNNI of vpdpbusd (uint8 x int8 quads summed into int32; an
// integer multiply-add counted as 2 ops, as FLOPs are), on 1 and on every thread of the pool. The ratios in docs/benchmarks.md (share of
// peak that BERT training and inference reach) divide by these.
//   bench_peak_flops [--seconds S]
#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "autograd/kernels/gemm.hpp"
#include "autograd/kernels/quantize.hpp"
#include "autograd/parallel.hpp"
#include "autograd/xt.hpp"

#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 9) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10))
#include <immintrin.h>
#define XG_PEAK_BF16 1
#else
#define XG_PEAK_BF16 0
#endif

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kChains = 12;  // independent accumulators: enough to hide the FMA latency on two ports

// FLOPs done by `iters` rounds of kChains FMAs of one vector each.
double fp32_fma_loop(size_t iters) {
  xg::fbatch acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = xg::fbatch(float(c) * 1e-3f);
  const xg::fbatch a(0.999999f), b(1e-7f);
  for (size_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = xsimd::fma(acc[c], a, b);
  float sink = 0;
  for (int c = 0; c < kChains; ++c) sink += xg::hsum(acc[c]);
  if (sink == 12345.f) std::puts("");  // keeps the loop alive
  return double(iters) * kChains * xg::kSimdWidth * 2;
}

#if XG_PEAK_BF16
// vdpbf16ps: 16 lanes, each a pair of bf16 products summed into fp32: 64 FLOPs.
__attribute__((target("avx512f,avx512bf16"))) double bf16_dot_loop(size_t iters) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c) * 1e-3f);
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3380);
  for (size_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  float lanes[16], sink = 0;
  for (int c = 0; c < kChains; ++c) {
    _mm512_storeu_ps(lanes, acc[c]);
    sink += lanes[0];
  }
  if (sink == 12345.f) std::puts("");
  return double(iters) * kChains * 64;
}

// vpdpbusd: 16 lanes, each four uint8 x int8 products summed into int32: 128 ops.
__attribute__((target("avx512f,avx512vnni"))) double int8_dot_loop(size_t iters) {
  __m512i acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_epi32(c);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (size_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
  int lanes[16], sink = 0;
  for (int c = 0; c < kChains; ++c) {
    _mm512_storeu_si512(lanes, acc[c]);
    sink += lanes[0];
  }
  if (sink == 12345) std::puts("");
  return double(iters) * kChains * 128;
}
#endif

// GFLOP/s of `loop` on `threads` threads: each task warms up, then counts what it does for about
// `seconds`; the rates add up. A task run after another on the same thread would count a core
// twice, so that is reported.
double measure(double (*loop)(size_t), int threads, double seconds) {
  xg::set_num_threads(threads);
  std::mutex m;
  std::set<std::thread::id> ran_on;
  double rate = 0;
  xg::parallel_for(size_t(threads), [&](size_t) {
    loop(1 << 16);  // warm-up (and clock ramp)
    const auto t0 = Clock::now();
    double mine = 0, secs = 0;
    while ((secs = std::chrono::duration<double>(Clock::now() - t0).count()) < seconds) mine += loop(1 << 20);
    std::lock_guard<std::mutex> lock(m);
    ran_on.insert(std::this_thread::get_id());
    rate += mine / secs;
  });
  if (ran_on.size() != size_t(threads))
    fmt::print(stderr, "bench_peak_flops: {} tasks ran on {} threads; the figure overstates\n", threads, ran_on.size());
  return rate / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else {
      fmt::print(stderr, "usage: bench_peak_flops [--seconds S]\n");
      return 2;
    }
  }
  const int all = xg::num_threads();
#if !defined(__FMA__)
  fmt::print("note: this build has no FMA instructions (XGRAD_NATIVE=OFF?): the fp32 figure is the build's, not the CPU's\n");
#endif
  fmt::print("fp32 FMA, {}-float vectors: 1 thread {:.1f} GFLOP/s, {} threads {:.1f} GFLOP/s\n", xg::kSimdWidth,
             measure(fp32_fma_loop, 1, seconds), all, measure(fp32_fma_loop, all, seconds));
#if XG_PEAK_BF16
  if (xg::gemm::bf16_native_available())
    fmt::print("bf16 dot (vdpbf16ps, fp32 sums): 1 thread {:.1f} GFLOP/s, {} threads {:.1f} GFLOP/s\n",
               measure(bf16_dot_loop, 1, seconds), all, measure(bf16_dot_loop, all, seconds));
  else
    fmt::print("bf16 dot: this CPU has no AVX512-BF16\n");
  if (xg::gemm::int8_vnni_available())
    fmt::print("int8 dot (vpdpbusd, int32 sums): 1 thread {:.1f} GOP/s, {} threads {:.1f} GOP/s\n",
               measure(int8_dot_loop, 1, seconds), all, measure(int8_dot_loop, all, seconds));
  else
    fmt::print("int8 dot: this CPU has no AVX512-VNNI\n");
#else
  fmt::print("bf16 and int8 dot: this build has no AVX-512 intrinsics\n");
#endif
  return 0;
}
