// Flat parameter and gradient arenas: parameters as views, tied weights as one parameter,
// gradients written in place, single-pass zeroing and norms, frozen parameters.
#include <catch2/catch.hpp>

#include "nn/nn.hpp"
#include "optim/optimizer.hpp"

using namespace xg;
using namespace xg::nn;

namespace {
// Two linears plus an output projection tied to the first one's weight, registered under a
// second name as Hugging Face ties a decoder to the word embeddings.
class TiedNet : public Module {
 public:
  TiedNet() {
    a = register_module("a", std::make_shared<Linear>(6, 6));
    b = register_module("b", std::make_shared<Linear>(6, 6));
    tied = register_parameter("decoder_weight", a->weight);
  }
  Tensor forward(const Tensor& x) { return matmul(b->forward(a->forward(x)), tied, false, true); }
  std::shared_ptr<Linear> a, b;
  Tensor tied;
};

void randomize(Module& m, uint64_t seed) {
  Generator g(seed);
  for (auto& [n, t] : m.named_parameters()) t.copy_(Tensor::normal(t.shape(), 0.f, 0.3f, g));
}

Tensor loss_of(TiedNet& net, uint64_t seed) {
  Generator g(seed);
  const Tensor x = Tensor::normal({5, 6}, 0.f, 1.f, g);
  const Tensor y = net.forward(x);
  return sum(mul(y, y));
}
}  // namespace

TEST_CASE("arena: a tied tensor is one parameter with two names", "[nn][arena]") {
  TiedNet net;
  CHECK(net.named_parameters().size() == 4);                  // a.weight, a.bias, b.weight, b.bias
  CHECK(net.named_parameters(/*all_names=*/true).size() == 5);
  CHECK(net.state_dict().count("decoder_weight") == 1);
  ParameterArena& arena = net.flatten_parameters();
  REQUIRE(arena.entries().size() == 4);
  // A module's own parameters come before its children's, so the tied tensor is found first
  // as "decoder_weight".
  CHECK(arena.entries()[0].names == std::vector<std::string>{"decoder_weight", "a.weight"});
  CHECK_THROWS_WITH(net.flatten_parameters(), Catch::Matchers::Contains("already called"));
}

TEST_CASE("arena: parameters and gradients live in two flat blocks", "[nn][arena]") {
  TiedNet plain, flat;
  randomize(plain, 1);
  randomize(flat, 1);
  const auto before = flat.a->weight.to_vector();
  ParameterArena& arena = flat.flatten_parameters();
  CHECK(flat.a->weight.to_vector() == before);  // values moved, not changed
  CHECK(flat.tied.impl() == flat.a->weight.impl());
  for (const auto& e : arena.entries()) {
    CHECK(e.param.same_storage(arena.flat_params()));
    CHECK(e.offset % 16 == 0);
  }
  loss_of(plain, 2).backward();
  loss_of(flat, 2).backward();
  for (const auto& e : arena.entries()) {
    const Tensor g = e.param.grad();
    REQUIRE(g.defined());
    CHECK(g.same_storage(arena.flat_grads()));  // written in place, not allocated
    const Tensor ref = plain.state_dict().at(e.names[0]).grad();
    CHECK(g.to_vector() == ref.to_vector());
  }
  // Norm and clipping over the block equal those over the tensors.
  const float norm_tensors = optim::clip_grad_norm(plain.parameters(), 1e9f);
  CHECK(arena.grad_norm() == Approx(norm_tensors).epsilon(1e-6));
  optim::clip_grad_norm(plain.parameters(), 0.5f);
  optim::clip_grad_norm(arena, 0.5f);
  for (const auto& e : arena.entries()) {
    const auto a = e.param.grad().to_vector(), b = plain.state_dict().at(e.names[0]).grad().to_vector();
    for (size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == Approx(b[i]).margin(1e-6));
  }
  // zero_grad: one pass; gradients undefined again until the next backward writes them.
  flat.zero_grad();
  CHECK_FALSE(flat.a->weight.grad().defined());
  for (float v : arena.flat_grads().to_vector()) REQUIRE(v == 0.f);
  loss_of(flat, 3).backward();
  CHECK(flat.a->weight.grad().same_storage(arena.flat_grads()));
}

TEST_CASE("arena: the optimizer steps a tied weight once", "[nn][arena][optim]") {
  TiedNet net;
  randomize(net, 4);
  net.flatten_parameters();
  optim::AdamW opt({{net.named_parameters(true), 0.f}}, 0.1f);
  CHECK(opt.groups()[0].params.size() == 4);  // decoder_weight is a.weight
  loss_of(net, 5).backward();
  const auto w0 = net.a->weight.to_vector(), g = net.a->weight.grad().to_vector();
  opt.step();
  // One Adam step moves each element by lr * g/(|g| + eps) ~= 0.1 against the gradient sign.
  const auto w1 = net.a->weight.to_vector();
  for (size_t i = 0; i < w0.size(); ++i)
    if (std::fabs(g[i]) > 1e-3f) REQUIRE(w0[i] - w1[i] == Approx(g[i] > 0 ? 0.1f : -0.1f).epsilon(1e-3));
}

TEST_CASE("arena: frozen parameters get no gradient and are not stepped", "[nn][arena][optim]") {
  TiedNet net;
  randomize(net, 6);
  net.b->requires_grad_(false);
  net.flatten_parameters();
  optim::Sgd opt({{net.named_parameters(), 0.f}}, 0.1f);
  CHECK(opt.groups()[0].params.size() == 2);  // only a.weight and a.bias
  const auto b0 = net.b->weight.to_vector();
  loss_of(net, 7).backward();
  CHECK_FALSE(net.b->weight.grad().defined());
  CHECK(net.a->weight.grad().defined());
  opt.step();
  CHECK(net.b->weight.to_vector() == b0);
}
