// Attention forward + backward at BERT's shapes: multi_head_attention (memory-linear, blocked)
// against the unfused composition it replaced (matmul, attention_softmax, matmul with head
// permutes), side by side in one run; GFLOP/s counts the useful matmul work (4 B h T^2 d forward,
// 8 B h T^2 d backward) and the ratio is what to read.
//   bench_attention [--batch B] [--heads N] [--head-dim D] [--seq-lens 128,512] [--reps R]
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/xgrad.hpp"

using namespace xg;

namespace {

using Clock = std::chrono::steady_clock;

// Best of `reps` seconds for forward, and for forward + backward.
template <class Attend>
std::pair<double, double> time_attention(size_t B, size_t T, size_t H, int reps, Attend attend) {
  Generator g(1);
  Tensor q = Tensor::normal({B, T, H}, 0.f, 1.f, g, true), k = Tensor::normal({B, T, H}, 0.f, 1.f, g, true);
  Tensor v = Tensor::normal({B, T, H}, 0.f, 1.f, g, true);
  double fwd = 1e30, both = 1e30;
  for (int r = 0; r < reps + 1; ++r) {  // the first rep warms caches and thread-local scratch
    {
      NoGradGuard no_grad;
      const auto t0 = Clock::now();
      attend(q, k, v);
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (r > 0) fwd = std::min(fwd, s);
    }
    const auto t0 = Clock::now();
    sum(attend(q, k, v)).backward();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r > 0) both = std::min(both, s);
  }
  return {fwd, both};
}

}  // namespace

int main(int argc, char** argv) {
  size_t B = 8, heads = 12, hd = 64;
  int reps = 5;
  std::vector<size_t> lens = {128, 512};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { fmt::print(stderr, "bench_attention: {} needs a value\n", a); std::exit(2); }
      return argv[++i];
    };
    if (a == "--batch") B = std::stoul(next());
    else if (a == "--heads") heads = std::stoul(next());
    else if (a == "--head-dim") hd = std::stoul(next());
    else if (a == "--reps") reps = std::stoi(next());
    else if (a == "--seq-lens") {
      lens.clear();
      std::stringstream ss(next());
      for (std::string t; std::getline(ss, t, ',');) lens.push_back(std::stoul(t));
    } else {
      fmt::print(stderr, "usage: bench_attention [--batch B] [--heads N] [--head-dim D] [--seq-lens 128,512] [--reps R]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  const size_t H = heads * hd;
  fmt::print("attention forward / forward+backward, batch {}, {} heads of {}, {} threads; GFLOP/s\n", B, heads, hd,
             num_threads());
  fmt::print("{:>6} {:>12} {:>12} {:>8} {:>12} {:>12} {:>8}\n", "T", "fused fwd", "unfused fwd", "ratio", "fused f+b",
             "unfused f+b", "ratio");
  for (size_t T : lens) {
    const double fwd_flop = 4.0 * B * heads * T * T * hd, both_flop = 3 * fwd_flop;
    const auto fused = time_attention(B, T, H, reps, [&](const Tensor& q, const Tensor& k, const Tensor& v) {
      return multi_head_attention(q, k, v, Tensor(), heads, 0.f, true);
    });
    const auto plain = time_attention(B, T, H, reps, [&](const Tensor& q, const Tensor& k, const Tensor& v) {
      return unfused_multi_head_attention(q, k, v, Tensor(), heads, 0.f, false);
    });
    fmt::print("{:>6} {:>12.1f} {:>12.1f} {:>8.2f} {:>12.1f} {:>12.1f} {:>8.2f}\n", T, fwd_flop / fused.first * 1e-9,
               fwd_flop / plain.first * 1e-9, plain.first / fused.first, both_flop / fused.second * 1e-9,
               both_flop / plain.second * 1e-9, plain.second / fused.second);
  }
}
