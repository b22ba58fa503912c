// Trains a small MLP on two interleaved spirals with the autograd API, printing progress.
//   train_spirals [--steps N] [--points N] [--seed S] [--lr LR]
#include <fmt/format.h>

#include <chrono>

#include "examples/train_spirals/spirals.hpp"
#include "util/cli.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"Trains a small MLP on two interleaved spirals with the autograd API.", "train_spirals"};
  xg::cli::show_defaults(app);
  xg::cli::add_number(app, "--steps", opt.steps, "Adam steps");
  xg::cli::add_number(app, "--points", opt.points_per_class, "points per class")->check(xg::cli::positive());
  xg::cli::add_number(app, "--seed", opt.seed, "seed for data and weights");
  xg::cli::add_number(app, "--lr", opt.lr, "learning rate")->check(xg::cli::positive());
  if (auto code = xg::cli::parse_or_exit(app, argc, argv)) return *code;
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
