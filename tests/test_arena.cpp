// Flat parameter and gradient arenas: parameters as views, tied weights as one parameter,
// gradients written in place, single-pass zeroing and norms, frozen parameters.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include "nn/nn.hpp"
#include "optim/optimizer.hpp"
#include "tests/temp_path.hpp"

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
  // zero_grad: gradients undefined again until the next backward writes them; the block is only
  // zeroed where no gradient came.
  flat.zero_grad();
  CHECK_FALSE(flat.a->weight.grad().defined());
  arena.zero_missing_grads();
  for (float v : arena.flat_grads().to_vector()) REQUIRE(v == 0.f);
  loss_of(flat, 3).backward();
  CHECK(flat.a->weight.grad().same_storage(arena.flat_grads()));
}

TEST_CASE("arena: zero_grad leaves the block; slots no gradient reached read as zeros", "[nn][arena]") {
  TiedNet net;
  randomize(net, 9);
  ParameterArena& arena = net.flatten_parameters();
  const auto range_of = [&](const Tensor& p) {
    for (const auto& e : arena.entries())
      if (e.param.impl() == p.impl()) {
        const auto all = arena.flat_grads().to_vector();
        return std::vector<float>(all.begin() + long(e.offset), all.begin() + long(e.offset + e.numel));
      }
    FAIL("not in the arena");
    return std::vector<float>();
  };
  loss_of(net, 1).backward();
  const std::vector<float> b_grad = range_of(net.b->bias);
  REQUIRE(b_grad != std::vector<float>(6, 0.f));
  // Zeroing writes nothing: b's slot still holds its gradient, though it is undefined now.
  net.zero_grad();
  CHECK_FALSE(net.b->bias.grad().defined());
  CHECK(range_of(net.b->bias) == b_grad);
  // A pass that reaches only a: b's stale slots are zeroed by the whole-block operations.
  Generator g(2);
  const Tensor y = net.a->forward(Tensor::normal({5, 6}, 0.f, 1.f, g));
  sum(mul(y, y)).backward();
  REQUIRE_FALSE(net.b->bias.grad().defined());
  double a_norm = 0;
  for (const Tensor& p : {net.a->weight, net.a->bias})
    for (float v : p.grad().to_vector()) a_norm += double(v) * v;
  CHECK(arena.grad_norm() == Approx(std::sqrt(a_norm)).epsilon(1e-12));
  CHECK(range_of(net.b->bias) == std::vector<float>(6, 0.f));
  CHECK(range_of(net.b->weight) == std::vector<float>(36, 0.f));
  // A parameter frozen after flattening: its slot's last gradient reads as zeros.
  net.zero_grad();
  loss_of(net, 3).backward();
  net.b->weight.requires_grad_(false);
  net.zero_grad();
  loss_of(net, 4).backward();
  CHECK_FALSE(net.b->weight.grad().defined());
  CHECK(net.b->bias.grad().defined());
  arena.zero_missing_grads();
  CHECK(range_of(net.b->weight) == std::vector<float>(36, 0.f));
  // Only the range asked for is zeroed.
  net.zero_grad();
  net.b->weight.requires_grad_(true);
  loss_of(net, 5).backward();
  net.zero_grad();
  const std::vector<float> stale = range_of(net.b->weight);
  size_t b_bias_offset = 0;
  for (const auto& e : arena.entries())
    if (e.param.impl() == net.b->bias.impl()) b_bias_offset = e.offset;
  arena.zero_missing_grads(b_bias_offset, 6);
  CHECK(range_of(net.b->bias) == std::vector<float>(6, 0.f));
  CHECK(range_of(net.b->weight) == stale);
}

TEST_CASE("arena: a gradient dropped by the optimizer's or a tensor's zero_grad still reads as zeros", "[nn][arena][optim]") {
  // Not the arena's own zero_grad: dropping the gradient marks the slot, so a step that reaches
  // b and then one that does not leave no stale gradient in the norm.
  TiedNet net;
  randomize(net, 9);
  ParameterArena& arena = net.flatten_parameters();
  optim::Sgd opt({{net.named_parameters(), 0.f}}, 0.1f);
  Generator g(4);
  const auto a_only_norm = [&] {
    const Tensor y = net.a->forward(Tensor::normal({5, 6}, 0.f, 1.f, g));
    sum(mul(y, y)).backward();
    double sq = 0;
    for (const Tensor& p : {net.a->weight, net.a->bias})
      for (float v : p.grad().to_vector()) sq += double(v) * v;
    return std::sqrt(sq);
  };
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    loss_of(net, 10 + round).backward();  // reaches b
    REQUIRE(arena.grad_norm() > 0.0);
    if (round == 0) {
      opt.zero_grad();
    } else {
      for (Tensor p : {net.a->weight, net.a->bias, net.b->weight, net.b->bias}) p.zero_grad();
    }
    CHECK(arena.grad_norm() == 0.0);  // every gradient dropped: the block reads as zeros
    const double expected = a_only_norm();  // reaches a alone
    REQUIRE_FALSE(net.b->bias.grad().defined());
    CHECK(arena.grad_norm() == Approx(expected).epsilon(1e-12));
    opt.zero_grad();
  }
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

TEST_CASE("arena: a step counts once against the shared storage, and a graph from before it is refused", "[nn][arena][optim]") {
  TiedNet net;
  randomize(net, 8);
  net.flatten_parameters();
  optim::Sgd opt({{net.named_parameters(true), 0.f}}, 0.1f);
  loss_of(net, 9).backward();
  Tensor stale = loss_of(net, 9);  // saved the weights as they are before the step
  const uint64_t before = net.a->weight.version();
  opt.step();
  CHECK(net.a->weight.version() == before + 1);  // every parameter is a view of one storage
  CHECK(net.b->weight.version() == net.a->weight.version());
  CHECK_THROWS_WITH(stale.backward(), Catch::Matchers::Contains("changed in place"));
}

TEST_CASE("arena: frozen parameters get no gradient and are not stepped", "[nn][arena][optim]") {
  TiedNet net;
  randomize(net, 6);
  net.b->requires_grad_(false);
  net.flatten_parameters();
  optim::Sgd opt({{net.named_parameters(), 0.f}}, 0.1f);
  CHECK(opt.groups()[0].params.size() == 4);  // b's too, as PyTorch keeps them: no gradient, no step
  const auto b0 = net.b->weight.to_vector();
  loss_of(net, 7).backward();
  CHECK_FALSE(net.b->weight.grad().defined());
  CHECK(net.a->weight.grad().defined());
  opt.step();
  CHECK(net.b->weight.to_vector() == b0);
  net.zero_grad();  // a frozen slot that never held a gradient is not zeroed again each step
  CHECK(net.a->weight.impl()->grad_slot_written);
  CHECK_FALSE(net.b->weight.impl()->grad_slot_written);
  REQUIRE(net.b->weight.impl()->grad_slot);  // but it has a slot: unfrozen, its gradient is in the block
}

namespace {
std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& kind, const NamedTensors& params) {
  // Two groups with different weight decay, as BERT's grouping makes them.
  std::vector<optim::ParamGroup> groups{{{}, 0.1f}, {{}, 0.f}};
  for (const auto& np : params) groups[np.first.find("bias") == std::string::npos ? 0 : 1].params.push_back(np);
  if (kind == "sgd") return std::make_unique<optim::Sgd>(groups, 0.05f, optim::SgdOptions{0.9f, 0.f, true});
  if (kind == "adam") return std::make_unique<optim::Adam>(groups, 0.05f);
  if (kind == "adamw") return std::make_unique<optim::AdamW>(groups, 0.05f);
  return std::make_unique<optim::Lamb>(groups, 0.05f);
}
}  // namespace

TEST_CASE("arena: a bound optimizer keeps its state in flat blocks and steps bit-identically", "[nn][arena][optim]") {
  for (const std::string kind : {"sgd", "adam", "adamw", "lamb"}) {
    SECTION(kind) {
      TiedNet plain, flat;
      randomize(plain, 8);
      randomize(flat, 8);
      flat.b->bias.requires_grad_(false);  // a frozen parameter inside the arena
      plain.b->bias.requires_grad_(false);
      flat.flatten_parameters();
      auto ref = make_optimizer(kind, plain.named_parameters());
      auto opt = make_optimizer(kind, flat.named_parameters());
      opt->bind(*flat.arena());
      for (uint64_t step = 0; step < 3; ++step) {
        plain.zero_grad();
        flat.zero_grad();
        loss_of(plain, 10 + step).backward();
        loss_of(flat, 10 + step).backward();
        ref->step();
        opt->step();
      }
      for (const auto& [name, t] : flat.named_parameters()) REQUIRE(t.to_vector() == plain.state_dict().at(name).to_vector());
      const StateDict a = opt->state_tensors(), b = ref->state_tensors();
      REQUIRE(a.size() == b.size());
      for (const auto& [key, t] : a) {
        REQUIRE(b.count(key));
        CHECK(t.to_vector() == b.at(key).to_vector());
        CHECK(t.impl()->storage != flat.arena()->flat_params().impl()->storage);
      }
    }
  }
}

TEST_CASE("arena: a bound optimizer's state saves and loads into its flat blocks", "[nn][arena][optim]") {
  TiedNet net, copy;
  randomize(net, 11);
  randomize(copy, 11);
  net.flatten_parameters();
  copy.flatten_parameters();
  optim::AdamW opt({{net.named_parameters(), 0.01f}}, 0.01f), restored({{copy.named_parameters(), 0.01f}}, 0.01f);
  opt.bind(*net.arena());
  restored.bind(*copy.arena());
  loss_of(net, 12).backward();
  opt.step();
  const std::string prefix = temp_path("xgrad_bound_optimizer");
  opt.save_state(prefix);
  restored.load_state(prefix);
  CHECK_THROWS_WITH(restored.bind(*copy.arena()), Catch::Matchers::Contains("before the first step"));
  // Both continue identically from the same weights and state.
  for (auto [name, t] : copy.named_parameters()) t.copy_(net.state_dict().at(name).detach());
  net.zero_grad();
  loss_of(net, 13).backward();
  loss_of(copy, 13).backward();
  opt.step();
  restored.step();
  for (const auto& [name, t] : copy.named_parameters()) REQUIRE(t.to_vector() == net.state_dict().at(name).to_vector());
  TiedNet other;
  optim::Sgd sgd({{other.named_parameters(), 0.f}}, 0.1f);
  CHECK_THROWS_WITH(sgd.bind(*net.arena()), Catch::Matchers::Contains("not in the arena"));
}

namespace {
// A decoder tied to an embedding, as in BERT's MLM head, whose gradient the backward writes in
// place (record_into). Reference: the same loss through w * 1 (a node, so no in-place path).
struct TiedEmbedding {
  std::vector<int64_t> ids{3, 0, 3, 5, 1, 3};  // repeats, and row 5 is padding below
  Tensor x, c;                                  // decoder input and output weights
  explicit TiedEmbedding(uint64_t seed) {
    Generator g(seed);
    x = Tensor::normal({4, 5}, 0.f, 1.f, g);
    c = Tensor::normal({6, 5}, 0.f, 1.f, g);
  }
  // sum(embedding(w) * c) + sum(linear(x, w)^2)
  Tensor loss(const Tensor& w, bool decoder = true) const {
    Tensor l = sum(mul(embedding(w, ids, {6}, /*padding_idx=*/5), c));
    if (decoder) {
      const Tensor y = linear(x, w, Tensor());
      l = add(l, sum(mul(y, y)));
    }
    return l;
  }
  std::vector<float> reference(const Tensor& w, bool decoder = true) const {
    Tensor leaf = w.detach().clone().requires_grad_(true);
    loss(leaf * 1.f, decoder).backward();
    return leaf.grad().to_vector();
  }
};

void fill_stale(const ParameterArena& arena) {  // what a first gradient must never read
  Tensor grads = arena.flat_grads();
  std::fill(grads.data(), grads.data() + grads.numel(), std::numeric_limits<float>::quiet_NaN());
}
}  // namespace

TEST_CASE("arena: a weight's GEMM and an embedding write straight into the gradient", "[nn][arena][engine]") {
  const TiedEmbedding net(5);
  Generator g(6);
  Tensor w = Tensor::normal({7, 5}, 0.f, 0.5f, g).requires_grad_(true);
  const std::vector<float> tied = net.reference(w), alone = net.reference(w, /*decoder=*/false);

  SECTION("into a stale arena slot: the decoder's GEMM overwrites it, the embedding adds its rows") {
    ParameterArena arena({{"w", w}});
    fill_stale(arena);
    net.loss(w).backward();
    CHECK_THAT(w.grad().to_vector(), Catch::Matchers::Approx(tied).margin(1e-5));
    CHECK(w.grad().data() == arena.flat_grads().data());
    arena.zero_grad();
    fill_stale(arena);
    net.loss(w, /*decoder=*/false).backward();
    CHECK(w.grad().to_vector() == alone);  // zeroed first; the padding row and unused rows stay 0
  }
  SECTION("into a leaf's existing gradient (beta 1), with hooks run once per pass and a retained graph") {
    int hook_runs = 0;
    w.register_grad_hook([&](const Tensor&) { ++hook_runs; });
    const Tensor l = net.loss(w);
    l.backward(/*retain_graph=*/true);
    const float* first = w.grad().data();
    l.backward();
    CHECK(w.grad().data() == first);
    std::vector<float> twice = tied;
    for (float& v : twice) v *= 2.f;
    CHECK_THAT(w.grad().to_vector(), Catch::Matchers::Approx(twice).margin(1e-5));
    CHECK(hook_runs == 2);
  }
  SECTION("a leaf with no gradient yet and no slot gets the dense gradient") {
    net.loss(w, /*decoder=*/false).backward();
    CHECK(w.grad().to_vector() == alone);
  }
  SECTION("one leaf as both inputs of a linear: written in place for one, added for the other") {
    Tensor ref = w.detach().clone().requires_grad_(true);
    const Tensor r = ref * 1.f;
    sum(linear(r, r, Tensor())).backward();
    ParameterArena arena({{"w", w}});
    fill_stale(arena);
    sum(linear(w, w, Tensor())).backward();
    CHECK_THAT(w.grad().to_vector(), Catch::Matchers::Approx(ref.grad().to_vector()).margin(1e-5));
  }
}

TEST_CASE("arena: a linear's bias gradient is written into its slot, then added to", "[nn][arena][engine]") {
  Generator g(8);
  const Tensor x = Tensor::normal({300, 20}, 0.f, 1.f, g);
  Tensor w = Tensor::normal({600, 20}, 0.f, 0.2f, g).requires_grad_(true);  // 600 outputs: column blocks
  Tensor b = Tensor::normal({600}, 0.f, 0.2f, g).requires_grad_(true);
  auto loss = [&](const Tensor& weight, const Tensor& bias) {  // two uses: a fresh slot, then one to add to
    const Tensor y = linear(x, weight, bias);
    return add(sum(mul(y, y)), sum(linear(x * 0.5f, weight, bias)));
  };
  Tensor w_ref = w.detach().clone().requires_grad_(true), b_ref = b.detach().clone().requires_grad_(true);
  loss(w_ref * 1.f, b_ref * 1.f).backward();
  ParameterArena arena({{"w", w}, {"b", b}});
  fill_stale(arena);
  loss(w, b).backward();
  CHECK_THAT(b.grad().to_vector(), Catch::Matchers::Approx(b_ref.grad().to_vector()).margin(1e-3));
  CHECK_THAT(w.grad().to_vector(), Catch::Matchers::Approx(w_ref.grad().to_vector()).margin(1e-3));
  // no rows: the bias's gradient is zero, not the slot's stale contents
  arena.zero_grad();
  fill_stale(arena);
  sum(linear(Tensor::zeros({0, 20}), w, b)).backward();
  CHECK(b.grad().to_vector() == std::vector<float>(600, 0.f));
}

namespace {
class Wide : public Module {  // 6,400 weights: update pieces of 2,048 and a partial one
 public:
  Wide() {
    a = register_module("a", std::make_shared<Linear>(64, 100));
    b = register_module("b", std::make_shared<Linear>(100, 3));
  }
  Tensor loss(uint64_t seed) {
    Generator g(seed);
    const Tensor y = b->forward(tanh(a->forward(Tensor::normal({7, 64}, 0.f, 1.f, g))));
    return sum(mul(y, y));
  }
  std::shared_ptr<Linear> a, b;
};
}  // namespace

TEST_CASE("arena: step(clip_scale(norm)) clips inside the update, bit for bit as clip_grad_norm then step",
          "[nn][arena][optim]") {
  using Make = std::function<std::unique_ptr<optim::Optimizer>(Module&)>;
  const std::vector<std::pair<std::string, Make>> kinds = {
      {"sgd", [](Module& m) { return std::make_unique<optim::Sgd>(std::vector<optim::ParamGroup>{{m.named_parameters(), 0.01f}}, 0.1f, optim::SgdOptions{0.9f}); }},
      {"adam", [](Module& m) { return std::make_unique<optim::Adam>(std::vector<optim::ParamGroup>{{m.named_parameters(), 0.01f}}, 0.1f); }},
      {"adamw", [](Module& m) { return std::make_unique<optim::AdamW>(std::vector<optim::ParamGroup>{{m.named_parameters(), 0.01f}}, 0.1f); }},
      {"lamb", [](Module& m) { return std::make_unique<optim::Lamb>(std::vector<optim::ParamGroup>{{m.named_parameters(), 0.01f}}, 0.1f); }},
  };
  for (const auto& [name, make] : kinds) {
    Wide clipped, folded;
    randomize(clipped, 3);
    randomize(folded, 3);
    ParameterArena &arena_c = clipped.flatten_parameters(), &arena_f = folded.flatten_parameters();
    auto opt_c = make(clipped), opt_f = make(folded);
    opt_c->bind(arena_c);
    opt_f->bind(arena_f);
    for (int step = 0; step < 3; ++step) {
      clipped.zero_grad();
      folded.zero_grad();
      clipped.loss(10 + step).backward();
      folded.loss(10 + step).backward();
      const float max_norm = step == 1 ? 1e9f : 0.05f;  // the middle step does not clip
      if (step != 1) REQUIRE(arena_c.grad_norm() > 2 * max_norm);  // these do
      optim::clip_grad_norm(arena_c, max_norm);
      opt_c->step();
      opt_f->step(optim::clip_scale(arena_f.grad_norm(), max_norm));
      INFO(name << " step " << step);
      CHECK(arena_f.flat_params().to_vector() == arena_c.flat_params().to_vector());
      CHECK(arena_f.flat_grads().to_vector() == arena_c.flat_grads().to_vector());  // clipped in place
    }
  }
  Wide net;
  auto opt = kinds[1].second(net);
  CHECK_THROWS_WITH(opt->step(0.0), Catch::Matchers::Contains("grad_scale 0"));
  CHECK_THROWS_WITH(opt->step(1.5), Catch::Matchers::Contains("grad_scale 1.5"));
}
