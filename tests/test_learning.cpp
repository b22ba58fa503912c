// The library learns: an MLP made of nn layers, trained with optim::Adam on the flat parameter
// arena, fits a 3x3 checkerboard (a boundary no linear model can draw) to 100% training accuracy.
#include <catch2/catch.hpp>

#include <cmath>

#include "nn/nn.hpp"
#include "optim/optimizer.hpp"

using namespace xg;

namespace {
struct Checkerboard {
  Tensor points;  // (n, 2) in [0, 1)^2
  std::vector<int64_t> labels;
};
// Cell parity of each point; points within `margin` of a cell edge are redrawn, so the classes
// are separable and 100% is reachable.
Checkerboard checkerboard(size_t n, float margin, Generator& gen) {
  Checkerboard d;
  std::vector<float> xy;
  while (d.labels.size() < n) {
    const float x = gen.uniform(), y = gen.uniform();
    auto near_edge = [&](float v) { return std::fabs(v * 3.f - std::round(v * 3.f)) < margin * 3.f; };
    if (near_edge(x) || near_edge(y)) continue;
    xy.insert(xy.end(), {x * 2.f - 1.f, y * 2.f - 1.f});
    d.labels.push_back((int64_t(x * 3.f) + int64_t(y * 3.f)) % 2);
  }
  d.points = Tensor::from_vector(xy, {n, 2});
  return d;
}
}  // namespace

TEST_CASE("an MLP of nn layers learns a checkerboard to 100% training accuracy", "[learning]") {
  Generator gen(0);
  const Checkerboard data = checkerboard(300, 0.02f, gen);
  nn::Sequential model({std::make_shared<nn::Linear>(2, 64), nn::Tanh(), std::make_shared<nn::Linear>(64, 64),
                        nn::Tanh(), std::make_shared<nn::Linear>(64, 2)});
  for (auto& [name, p] : model.named_parameters())
    p.copy_(Tensor::normal(p.shape(), 0.f, name.find("bias") != std::string::npos ? 0.f : 1.f / std::sqrt(float(p.shape().back())), gen));
  model.flatten_parameters();
  optim::Adam adam({{model.named_parameters(), 0.f}}, 0.01f);
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 1500; ++step) {
    model.zero_grad();
    Tensor loss = cross_entropy(model.forward(data.points), data.labels);
    if (step == 0) first_loss = loss.item();
    last_loss = loss.item();
    loss.backward();
    adam.step();
  }
  NoGradGuard no_grad;
  CHECK(last_loss < 0.05f * first_loss);
  const std::vector<float> logits = model.forward(data.points).to_vector();
  size_t correct = 0;
  for (size_t i = 0; i < data.labels.size(); ++i)
    correct += int64_t(logits[2 * i + 1] > logits[2 * i]) == data.labels[i];
  CHECK(correct == data.labels.size());
}
