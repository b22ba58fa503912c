// The autograd learns: a small MLP fits two spirals to 100% training accuracy in a fixed budget.
#include <catch2/catch.hpp>

#include "examples/train_spirals/spirals.hpp"

TEST_CASE("an MLP learns two spirals to 100% training accuracy", "[learning]") {
  xg::Generator gen(0);
  const auto data = spirals::make(100, 0.02f, 1.5f, gen);
  spirals::Mlp model({2, 64, 64, 2}, gen);
  spirals::Adam adam(model.parameters(), 0.01f);
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 1000; ++step) {
    xg::Tensor loss = xg::cross_entropy(model.forward(data.points), data.labels);
    if (step == 0) first_loss = loss.item();
    last_loss = loss.item();
    loss.backward();
    adam.step();
  }
  xg::NoGradGuard no_grad;
  CHECK(last_loss < 0.05f * first_loss);
  CHECK(spirals::accuracy(model.forward(data.points), data.labels) == 1.0);
}
