// Tokenizer throughput: MB of UTF-8 text encoded per second, one line at a time on one thread
// and batch-encoded on all threads. Prints "MB/s 1 thread: X" and "MB/s N threads: Y".
//   bench_tokenizer VOCAB|DIR TEXT [--seconds S] [--cased]
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "text/load_tokenizer.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: bench_tokenizer VOCAB|DIR TEXT [--seconds S] [--cased]\n");
    return 2;
  }
  double budget = 3;
  xg::text::TokenizerOptions opt;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) budget = std::stod(argv[++i]);
    else if (a == "--cased") opt.lowercase = false;
  }
  const std::unique_ptr<xg::text::Tokenizer> tok = xg::text::open_tokenizer(argv[1], opt);
  std::ifstream in(argv[2]);
  if (!in) {
    fmt::print(stderr, "bench_tokenizer: cannot open {}\n", argv[2]);
    return 1;
  }
  std::vector<std::string> lines;
  size_t bytes = 0;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) {
      bytes += l.size() + 1;
      lines.push_back(std::move(l));
    }
  const double mb = double(bytes) / 1e6;
  fmt::print("{}: {} lines, {:.2f} MB\n", argv[2], lines.size(), mb);
  using Clock = std::chrono::steady_clock;
  auto rate = [&](auto&& pass) {
    pass();  // warm-up
    size_t passes = 0;
    const auto t0 = Clock::now();
    double secs = 0;
    do {
      pass();
      ++passes;
      secs = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (secs < budget);
    return mb * double(passes) / secs;
  };
  size_t tokens = 0;
  const double one = rate([&] {
    tokens = 0;
    for (const auto& l : lines) tokens += tok->encode(l).size();
  });
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  xg::text::EncodeOptions no_pad;
  const double all = rate([&] { tok->encode_batch(lines, no_pad, threads); });
  fmt::print("tokens per pass: {}\n", tokens);
  fmt::print("MB/s 1 thread: {:.2f}\n", one);
  fmt::print("MB/s {} threads: {:.2f}\n", threads, all);
}
