// Times xgrad's sgemm and, when built with OpenBLAS (or MKL: bench_gemm_mkl), cblas_sgemm on the same shapes, same thread
// count, same run. Each is timed as the median of repeated calls after a warm-up; the two are
// interleaved so machine noise hits both alike.
//   bench_gemm M N K [--batch B] [--threads T] [--ta] [--tb] [--seconds S]
//   bench_gemm            (the BERT-Base shapes, 1 and 2 threads)
//   bench_gemm --packed   (xgrad with B packed once, as inference weights are: sgemm_packed;
//                          BERT-Base's linear layers at 1 and 8 x 128 tokens, or the shape given)
//   bench_gemm --bf16     (sgemm_bf16 against sgemm on BERT's linear shapes, forward and backward,
//                          at M = 1024 and 4096, or the shape given, plus the register-only fp32
//                          FMA and bf16 vdpbf16ps peaks; "ratio" there is bf16 GFLOP/s / fp32 GFLOP/s)
//   bench_gemm --int8     (the int8 GEMM of dynamic quantization, on a PackedB::int8, against sgemm_packed
//                          on fp32 weights: BERT-Base's linear layers at 1 and 8 x 128 tokens, or the shape
//                          given, the rows' quantization included; with the register-only vpdpbusd peak;
//                          "ratio" there is int8 GOP/s / fp32 GFLOP/s)
// Last line: "ratio: X" = xgrad GFLOP/s / the peer's GFLOP/s (the smallest over shapes when
// several run).
#include <fmt/format.h>
// The peak loops use AVX512-BF16 intrinsics: GCC 10 or clang 9 and later.
#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 9) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10))
#define XG_BENCH_PEAKS 1
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <unistd.h>
#include <string>
#include <thread>
#include <vector>

#include "autograd/kernels/gemm.hpp"
#include "autograd/kernels/quantize.hpp"
#include "autograd/parallel.hpp"
#include "util/random.hpp"

// The peer BLAS: MKL when built as bench_gemm_mkl (bench/gemm_vs_mkl.sh), else OpenBLAS if found.
#if defined(XGRAD_HAVE_MKL)
#include <mkl.h>
#define XGRAD_HAVE_BLAS 1
constexpr const char* kPeer = "MKL";
void peer_threads(int t) { mkl_set_num_threads(t); }
#elif defined(XGRAD_HAVE_OPENBLAS)
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#define XGRAD_HAVE_BLAS 1
constexpr const char* kPeer = "OpenBLAS";
void peer_threads(int t) { openblas_set_num_threads(t); }
#endif

namespace {

struct Shape {
  size_t batch, M, N, K;
  bool ta, tb;
};

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

template <class F>
double seconds(F&& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Timing {
  double ours_s, blas_s, ratio;  // medians; ratio = median over pairs of blas_s / ours_s
};

// Single-threaded: alternates one call of each, so frequency changes and neighbours' load hit
// both alike; the ratio is the median over pairs. Multi-threaded: OpenBLAS's worker threads
// busy-wait ~0.1 s after each call (THREAD_TIMEOUT), which would steal the cores from the call
// that follows, so blocks of calls alternate with an idle gap and the ratio is the median over
// rounds of block medians.
template <class F, class G>
Timing time_pairs(F&& ours, G&& blas, double budget_s, int threads) {
  ours();  // warm-up: page faults, packing buffers, thread wake-up
  blas();
  std::vector<double> t_ours, t_blas, ratios;
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  if (threads == 1) {
    while (t_ours.size() < 5 || (elapsed() < budget_s && t_ours.size() < 500)) {
      t_ours.push_back(seconds(ours));
      t_blas.push_back(seconds(blas));
      ratios.push_back(t_blas.back() / t_ours.back());
    }
    return {median(t_ours), median(t_blas), median(ratios)};
  }
  auto block = [&](auto&& f) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    f();  // first call after the gap wakes the threads; not timed
    std::vector<double> t;
    const auto b0 = Clock::now();
    while (t.size() < 3 || (std::chrono::duration<double>(Clock::now() - b0).count() < 0.1 && t.size() < 200))
      t.push_back(seconds(f));
    return median(t);
  };
  while (ratios.size() < 5 || (elapsed() < budget_s * 4 && ratios.size() < 50)) {
    t_ours.push_back(block(ours));
    t_blas.push_back(block(blas));
    ratios.push_back(t_blas.back() / t_ours.back());
  }
  return {median(t_ours), median(t_blas), median(ratios)};
}

// packed: ours is sgemm_packed with B packed once before timing (as inference weights are).
double run_shape(const Shape& s, int threads, double budget_s, bool packed) {
  xg::set_num_threads(threads);
  xg::Generator gen(1);
  std::vector<float> A(s.batch * s.M * s.K), B(s.batch * s.K * s.N), C(s.batch * s.M * s.N);
  for (auto& v : A) v = gen.uniform() - 0.5f;
  for (auto& v : B) v = gen.uniform() - 0.5f;
  const size_t lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
  const double gflop = 2.0 * double(s.batch) * double(s.M) * double(s.N) * double(s.K) / 1e9;
  std::vector<xg::gemm::PackedB> packed_b;
  if (packed)
    for (size_t b = 0; b < s.batch; ++b)
      packed_b.push_back(xg::gemm::PackedB::fp32(s.tb, s.K, s.N, B.data() + b * s.K * s.N, ldb));
  auto ours = [&] {
    if (!packed)
      return xg::gemm::sgemm_batched(s.ta, s.tb, s.batch, s.M, s.N, s.K, 1.f, A.data(), lda, s.M * s.K,
                                     B.data(), ldb, s.K * s.N, 0.f, C.data(), s.N, s.M * s.N);
    for (size_t b = 0; b < s.batch; ++b)
      xg::gemm::sgemm_packed(s.ta, s.M, 1.f, A.data() + b * s.M * s.K, lda, packed_b[b], 0.f,
                             C.data() + b * s.M * s.N, s.N);
  };
  const std::string what = fmt::format("{:>3} x {:>5} x {:>5} x {:>5} {:<8} threads={}{}", s.batch,
                                       s.M, s.N, s.K,
                                       std::string(s.ta ? "A^T" : "") + (s.tb ? "B^T" : ""),
                                       threads, packed ? " packed B" : "");
#ifdef XGRAD_HAVE_BLAS
  peer_threads(threads);
  auto blas_one = [&](size_t b) {
    cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, int(s.M),
                int(s.N), int(s.K), 1.f, A.data() + b * s.M * s.K, int(lda), B.data() + b * s.K * s.N, int(ldb), 0.f,
                C.data() + b * s.M * s.N, int(s.N));
  };
  auto blas = [&] {
    for (size_t b = 0; b < s.batch; ++b) blas_one(b);
  };
  Timing t = time_pairs(ours, blas, budget_s, threads);
  const char* peer_way = "";
  if (s.batch > 1 && threads > 1) {
    // A batch of small GEMMs, each on every thread, spends much of its time starting and joining
    // the threads. The peer also runs the batch spread over the threads, each call on one (what
    // MKL's cblas_sgemm_batch does; here on xgrad's pool), and the faster way is the peer.
    auto blas_spread = [&] {
      xg::parallel_range(s.batch, 1, [&](size_t b0, size_t b1) {
        for (size_t b = b0; b < b1; ++b) blas_one(b);
      });
    };
    peer_threads(1);
    const Timing spread = time_pairs(ours, blas_spread, budget_s, threads);
    peer_threads(threads);
    if (spread.ratio < t.ratio) t = spread, peer_way = " (batch over threads)";
  }
  fmt::print("{}  xgrad {:6.1f} GFLOP/s  {} {:6.1f} GFLOP/s{}  ratio {:.3f}\n", what, gflop / t.ours_s, kPeer,
             gflop / t.blas_s, peer_way, t.ratio);
  std::fflush(stdout);
  return t.ratio;
#else
  ours();
  std::vector<double> t;
  const auto start = Clock::now();
  while (t.size() < 5 ||
         (std::chrono::duration<double>(Clock::now() - start).count() < budget_s && t.size() < 500))
    t.push_back(seconds(ours));
  fmt::print("{}  xgrad {:6.1f} GFLOP/s\n", what, gflop / median(t));
  return -1;
#endif
}

// ---- bf16 mode ----

#if defined(XG_BENCH_PEAKS)
// Register-only loops: 16 independent accumulators, so the pipes, not the latency, set the pace.
constexpr int kPeakChains = 16;

// The sum of every lane of every accumulator, so the loops cannot be dropped.
__attribute__((target("avx512f"))) float sum_lanes(const __m512* acc) {
  alignas(64) float lanes[16];
  float total = 0;
  for (int i = 0; i < kPeakChains; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    for (float v : lanes) total += v;
  }
  return total;
}

__attribute__((target("avx512f"))) float fma_loop(size_t iters) {
  __m512 acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (size_t n = 0; n < iters; ++n)
#pragma GCC unroll 16
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  return sum_lanes(acc);
}

__attribute__((target("avx512f,avx512bf16"))) float dpbf16_loop(size_t iters) {
  __m512 acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.5f));
  for (size_t n = 0; n < iters; ++n)
#pragma GCC unroll 16
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  return sum_lanes(acc);
}

__attribute__((target("avx512f,avx512vnni"))) float dpbusd_loop(size_t iters) {
  __m512i acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (size_t n = 0; n < iters; ++n)
#pragma GCC unroll 16
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  alignas(64) int32_t lanes[16];
  float total = 0;
  for (int i = 0; i < kPeakChains; ++i) {
    _mm512_store_si512(lanes, acc[i]);
    for (int32_t v : lanes) total += float(v);
  }
  return total;
}

// Best of several timings of `loop`, in GFLOP/s on this thread; flop_per_op per instruction.
template <class Loop>
double peak_gflops(Loop loop, double flop_per_op) {
  const size_t iters = 20'000'000;
  double best = 0;
  volatile float sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    float r = 0;
    const double s = seconds([&] { r = loop(iters); });
    sink = sink + r;
    best = std::max(best, double(iters) * kPeakChains * flop_per_op / s / 1e9);
  }
  return best;
}
#endif

// Register-only peaks on one thread: {fp32 FMA, bf16 vdpbf16ps} GFLOP/s; 0 where unavailable.
std::pair<double, double> register_peaks() {
#if defined(XG_BENCH_PEAKS)
  if (!__builtin_cpu_supports("avx512f")) return {0, 0};
  const double fp32 = peak_gflops(fma_loop, 32);  // 16 lanes x (multiply + add)
  const double bf16 = xg::gemm::bf16_native_available()
                          ? peak_gflops(dpbf16_loop, 64)  // 16 lanes x 2 pairs x (multiply + add)
                          : 0;
  return {fp32, bf16};
#else
  return {0, 0};
#endif
}

// sgemm_bf16 against sgemm on one shape, interleaved as time_pairs does; returns bf16/fp32.
double run_bf16_shape(const Shape& s, int threads, double budget_s, double bf16_peak_1t) {
  xg::set_num_threads(threads);
  xg::Generator gen(1);
  std::vector<float> A(s.M * s.K), B(s.K * s.N), C(s.M * s.N);
  for (auto& v : A) v = gen.uniform() - 0.5f;
  for (auto& v : B) v = gen.uniform() - 0.5f;
  const size_t lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
  const double gflop = 2.0 * double(s.M) * double(s.N) * double(s.K) / 1e9;
  auto bf16 = [&] {
    xg::gemm::sgemm_bf16(s.ta, s.tb, s.M, s.N, s.K, 1.f, A.data(), lda, B.data(), ldb, 0.f,
                         C.data(), s.N);
  };
  auto fp32 = [&] {
    xg::gemm::sgemm(s.ta, s.tb, s.M, s.N, s.K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(),
                    s.N);
  };
  const Timing t = time_pairs(bf16, fp32, budget_s, threads);
  const double share = bf16_peak_1t > 0 ? gflop / t.ours_s / (bf16_peak_1t * threads) : 0;
  fmt::print("{:>5} x {:>5} x {:>5} {:<8} threads={}  fp32 {:6.1f} GFLOP/s  bf16 {:6.1f} GFLOP/s "
             "({:4.1f}% of bf16 peak)  bf16/fp32 {:.2f}\n",
             s.M, s.N, s.K, std::string(s.ta ? "A^T" : "") + (s.tb ? "B^T" : ""), threads,
             gflop / t.blas_s, gflop / t.ours_s, 100 * share, t.ratio);
  std::fflush(stdout);
  return t.ratio;
}

// The int8 GEMM (B quantized once, A's rows quantized in each call) against sgemm_packed on the
// same weights at fp32; returns int8 GOP/s / fp32 GFLOP/s.
double run_int8_shape(const Shape& s, int threads, double budget_s, double int8_peak_1t) {
  xg::set_num_threads(threads);
  xg::Generator gen(1);
  std::vector<float> A(s.M * s.K), B(s.K * s.N), C(s.M * s.N);
  for (auto& v : A) v = gen.uniform() - 0.5f;
  for (auto& v : B) v = gen.uniform() - 0.5f;
  const size_t ldb = s.tb ? s.K : s.N;
  const double gop = 2.0 * double(s.M) * double(s.N) * double(s.K) / 1e9;
  const auto q = xg::gemm::PackedB::int8(s.tb, s.K, s.N, B.data(), ldb);
  const auto f = xg::gemm::PackedB::fp32(s.tb, s.K, s.N, B.data(), ldb);
  auto int8 = [&] { xg::gemm::sgemm_packed(false, s.M, 1.f, A.data(), s.K, q, 0.f, C.data(), s.N); };
  auto fp32 = [&] { xg::gemm::sgemm_packed(false, s.M, 1.f, A.data(), s.K, f, 0.f, C.data(), s.N); };
  const Timing t = time_pairs(int8, fp32, budget_s, threads);
  const double share = int8_peak_1t > 0 ? gop / t.ours_s / (int8_peak_1t * threads) : 0;
  fmt::print("{:>5} x {:>5} x {:>5} threads={}  fp32 {:6.1f} GFLOP/s  int8 {:6.1f} GOP/s ({:4.1f}% of int8 peak)  "
             "int8/fp32 {:.2f}\n",
             s.M, s.N, s.K, threads, gop / t.blas_s, gop / t.ours_s, 100 * share, t.ratio);
  std::fflush(stdout);
  return t.ratio;
}

int int8_main(const std::vector<int>& threads, double budget, std::vector<Shape> shapes) {
  fmt::print("int8 kernel: {}\n", xg::gemm::int8_kernel() == xg::gemm::Int8Kernel::Vnni ? "AVX512-VNNI (vpdpbusd)"
                                                                                       : "portable (int32 loop)");
  double peak = 0;
#if defined(XG_BENCH_PEAKS)
  if (xg::gemm::int8_vnni_available()) peak = peak_gflops(dpbusd_loop, 128);  // 16 lanes x 4 x (multiply + add)
#endif
  fmt::print("register-only peak, 1 thread: int8 vpdpbusd {:.1f} GOP/s\n", peak);
  if (shapes.empty())
    for (size_t M : {128, 1024})
      for (auto [N, K] : std::vector<std::pair<size_t, size_t>>{{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}})
        shapes.push_back({1, M, N, K, false, true});
  double worst = 1e30;
  for (int t : threads)
    for (const auto& s : shapes) worst = std::min(worst, run_int8_shape(s, t, budget, peak));
  fmt::print("ratio: {:.3f}\n", worst);
  return 0;
}

int bf16_main(const std::vector<int>& threads, double budget, std::vector<Shape> shapes) {
  fmt::print("bf16 kernel: {}\n", xg::gemm::bf16_kernel() == xg::gemm::Bf16Kernel::Native
                                      ? "AVX512-BF16 (vdpbf16ps)"
                                      : "fallback (bf16-rounded inputs, fp32 sgemm)");
  const auto [fp32_peak, bf16_peak] = register_peaks();
  fmt::print("register-only peak, 1 thread: fp32 FMA {:.1f} GFLOP/s, bf16 vdpbf16ps {:.1f} GFLOP/s "
             "(bf16/fp32 {:.2f})\n",
             fp32_peak, bf16_peak, fp32_peak > 0 ? bf16_peak / fp32_peak : 0.0);
  // By default a linear layer (in -> out) over M tokens: forward X W^T, backward dY W and dY^T X.
  if (shapes.empty())
    for (size_t M : {1024, 4096})
      for (auto [in, out] : std::vector<std::pair<size_t, size_t>>{{768, 768}, {768, 3072}, {3072, 768}}) {
        shapes.push_back({1, M, out, in, false, true});
        shapes.push_back({1, M, in, out, false, false});
        shapes.push_back({1, out, in, M, true, false});
      }
  double worst = 1e30;
  for (int t : threads)
    for (const auto& s : shapes) worst = std::min(worst, run_bf16_shape(s, t, budget, bf16_peak));
  fmt::print("ratio: {:.3f}\n", worst);
  return 0;
}

}  // namespace

#if defined(XGRAD_HAVE_OPENBLAS) && !defined(XGRAD_HAVE_MKL)
extern "C" char* openblas_get_corename(void);
#endif

int main(int argc, char** argv) {
#if defined(XGRAD_HAVE_MKL)
  char version[256];
  mkl_get_version_string(version, sizeof version);
  fmt::print("MKL: {}\n", version);
#elif defined(XGRAD_HAVE_OPENBLAS)
  // Debian's OpenBLAS 0.3.21 does not know newer AVX-512 Xeons (Sapphire/Emerald Rapids) and
  // falls back to its SSE3 "Prescott" kernels, 5x slower than it can be. Comparing against that
  // would flatter us, so pick its AVX-512 kernels (read at library load, hence the re-exec).
  if (!std::getenv("OPENBLAS_CORETYPE") && std::string(openblas_get_corename()) == "Prescott" &&
      __builtin_cpu_supports("avx512f")) {
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    execv("/proc/self/exe", argv);
  }
  fmt::print("OpenBLAS core: {}\n", openblas_get_corename());
#endif
  std::vector<size_t> dims;
  size_t batch = 1;
  std::vector<int> threads;
  bool ta = false, tb = false, bf16 = false, packed = false, int8 = false;
  double budget = 1.0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "bench_gemm: {} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--batch") batch = std::stoul(next());
    else if (a == "--threads") threads.push_back(std::stoi(next()));
    else if (a == "--ta") ta = true;
    else if (a == "--tb") tb = true;
    else if (a == "--seconds") budget = std::stod(next());
    else if (a == "--bf16") bf16 = true;
    else if (a == "--packed") packed = true;
    else if (a == "--int8") int8 = true;
    else if (a == "--help" || a == "-h") {
      fmt::print("usage: bench_gemm [M N K] [--batch B] [--threads T]... [--ta] [--tb] [--packed] [--seconds S]\n"
                 "       bench_gemm [M N K [--ta] [--tb]] --bf16 [--threads T]... [--seconds S]\n"
                 "       bench_gemm [M N K [--tb]] --int8 [--threads T]... [--seconds S]\n");
      return 0;
    } else dims.push_back(std::stoul(a));
  }
  if (!dims.empty() && dims.size() != 3) {
    fmt::print(stderr, "bench_gemm: give M N K (three sizes), got {} numbers\n", dims.size());
    return 2;
  }
  if (threads.empty()) threads = {1, 2};
  std::vector<Shape> shapes;
  if (!dims.empty()) shapes.push_back({batch, dims[0], dims[1], dims[2], ta, tb});
  if (bf16 && (batch != 1 || packed)) {
    fmt::print(stderr, "bench_gemm: --bf16 times one plain GEMM per shape: no --batch or --packed\n");
    return 2;
  }
  if (int8 && (batch != 1 || packed || ta || bf16)) {
    fmt::print(stderr, "bench_gemm: --int8 times one GEMM per shape on op(A) = A: no --batch, --packed, --ta or --bf16\n");
    return 2;
  }
  if (int8) return int8_main(threads, budget, shapes);
  if (bf16) return bf16_main(threads, budget, shapes);
  if (!shapes.empty()) {  // the shape given
  } else if (packed) {  // BERT-Base's linear layers in inference, batch 1 and 8 x 128 tokens
    for (size_t M : {128, 1024})
      for (auto [N, K] : std::vector<std::pair<size_t, size_t>>{{768, 768}, {3072, 768}, {768, 3072}})
        shapes.push_back({1, M, N, K, false, true});
  } else {  // BERT-Base, batch 8 x 128 tokens
    shapes = {{1, 1024, 768, 768, false, true},    {1, 1024, 3072, 768, false, true},
              {1, 1024, 768, 3072, false, true},   {1, 1024, 30522, 768, false, true},
              {96, 128, 128, 64, false, true},     {1, 1024, 768, 768, false, false},
              {1, 768, 768, 1024, true, false}};
  }
  double worst = 1e30;
  for (int t : threads)
    for (const auto& s : shapes) worst = std::min(worst, run_shape(s, t, budget, packed));
#ifdef XGRAD_HAVE_BLAS
  fmt::print("ratio: {:.3f}\n", worst);
#else
  fmt::print("ratio: n/a (built without OpenBLAS)\n");
#endif
}
