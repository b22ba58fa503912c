// Trains a small MLP on two interleaved spirals with the autograd API, printing progress.
//   train_spirals [--steps N] [--points N] [--seed S] [--lr LR]
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "examples/train_spirals/spirals.hpp"

namespace {
struct Options {
  size_t steps = 1500;
  size_t points_per_class = 200;
  uint64_t seed = 0;
  float lr = 0.01f;
  float noise = 0.02f;
  float turns = 1.5f;
  size_t hidden = 64;
};

[[noreturn]] void usage(int code) {
  const Options d;
  fmt::print("usage: train_spirals [--steps N ({})] [--points N per class ({})] [--seed S ({})] "
             "[--lr LR ({})]\n",
             d.steps, d.points_per_class, d.seed, d.lr);
  std::exit(code);
}
}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage(0);
    if (i + 1 >= argc) usage(2);
    const std::string v = argv[++i];
    try {
      if (a == "--steps") opt.steps = std::stoul(v);
      else if (a == "--points") opt.points_per_class = std::stoul(v);
      else if (a == "--seed") opt.seed = std::stoull(v);
      else if (a == "--lr") opt.lr = std::stof(v);
      else usage(2);
    } catch (const std::exception&) {
      fmt::print(stderr, "train_spirals: bad value '{}' for {}\n", v, a);
      return 2;
    }
  }
  xg::Generator gen(opt.seed);
  const auto data = spirals::make(opt.points_per_class, opt.noise, opt.turns, gen);
  spirals::Mlp model({2, opt.hidden, opt.hidden, 2}, gen);
  spirals::Adam adam(model.parameters(), opt.lr);
  fmt::print("two spirals: {} points, MLP 2-{}-{}-2 (tanh), Adam lr {}, {} steps\n",
             2 * opt.points_per_class, opt.hidden, opt.hidden, opt.lr, opt.steps);
  const auto start = std::chrono::steady_clock::now();
  for (size_t step = 1; step <= opt.steps; ++step) {
    xg::Tensor logits = model.forward(data.points);
    xg::Tensor loss = xg::cross_entropy(logits, data.labels);
    loss.backward();
    adam.step();
    if (step % 100 == 0 || step == opt.steps) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      fmt::print("step {:5d}/{}  loss {:.4f}  accuracy {:6.2f}%  {:.0f} steps/s\n", step, opt.steps,
                 loss.item(), 100 * spirals::accuracy(logits, data.labels), double(step) / secs);
    }
  }
  xg::NoGradGuard no_grad;
  const double acc = spirals::accuracy(model.forward(data.points), data.labels);
  fmt::print("final training accuracy: {:.2f}%\n", 100 * acc);
  return 0;
}
