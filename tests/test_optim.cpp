// Optimizers and schedules against PyTorch 1.13 trajectories (LAMB against the reference in
// tools/gen_nn_goldens.py): 10 steps of warm-up 3 then linear decay, BERT's weight-decay groups.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "nn/nn.hpp"
#include "optim/optim.hpp"
#include "tests/golden.hpp"
#include "tests/temp_path.hpp"
#include "tests/thread_count.hpp"

using namespace xg;
using namespace xg::nn;
using namespace xg::optim;
using xg::test::max_scaled_error;

namespace {

const Tensor& golden(const std::string& name) { return xg::test::nn_golden(name); }

// dense (4 -> 3), tanh, LayerNorm: the generator's Tiny model.
struct Tiny : Module {
  std::shared_ptr<Linear> dense = register_module("dense", std::make_shared<Linear>(4, 3));
  std::shared_ptr<LayerNorm> ln = register_module("LayerNorm", std::make_shared<LayerNorm>(3, 1e-5f));
  Tensor forward(const Tensor& x) { return ln->forward(tanh(dense->forward(x))); }
};

void load_init(Tiny& m) {
  StateDict sd;
  for (auto& [n, _] : m.named_parameters()) sd[n] = golden("optim.init." + n);
  m.load_state_dict(sd);
}

Tensor loss_of(Tiny& m) { return mse_loss(m.forward(golden("optim.in.x")), golden("optim.in.y")); }

// The optimizers with a PyTorch trajectory in nn_goldens.safetensors (tools/gen_nn_goldens.py).
const char* const kOptimizers[] = {"adamw", "adam", "sgd_momentum", "sgd_nesterov", "sgd", "sgd_dampening",
                                   "lamb", "lamb_no_bias_correction"};

std::unique_ptr<Optimizer> make(const std::string& name, std::vector<ParamGroup> groups, float lr = 0.1f) {
  if (name == "adamw") return std::make_unique<AdamW>(groups, lr);
  if (name == "adam") return std::make_unique<Adam>(groups, lr);
  if (name == "sgd_momentum") return std::make_unique<Sgd>(groups, lr, SgdOptions{0.9f, 0.f, false});
  if (name == "sgd_nesterov") return std::make_unique<Sgd>(groups, lr, SgdOptions{0.9f, 0.f, true});
  if (name == "sgd") return std::make_unique<Sgd>(groups, lr);
  if (name == "sgd_dampening") return std::make_unique<Sgd>(groups, lr, SgdOptions{0.9f, 0.5f, false});
  if (name == "lamb_no_bias_correction") return std::make_unique<Lamb>(groups, lr, LambOptions{0.9f, 0.999f, 1e-6f, false});
  REQUIRE(name == "lamb");
  return std::make_unique<Lamb>(groups, lr);
}
std::unique_ptr<Optimizer> make(const std::string& name, Tiny& m) {
  return make(name, bert_param_groups(m.named_parameters(), 0.01f));
}

}  // namespace

TEST_CASE("optimizer trajectories match PyTorch over 10 scheduled steps", "[optim][parity]") {
  const LrSchedule sched = LrSchedule::linear(0.1f, 3, 10);
  for (const std::string name : kOptimizers) {
    Tiny m;
    load_init(m);
    auto opt = make(name, m);
    double worst = 0;
    for (int step = 0; step < 10; ++step) {
      opt->set_lr(sched.at(step));
      opt->zero_grad();
      loss_of(m).backward();
      opt->step();
      for (auto& [n, p] : m.named_parameters()) {
        INFO(name << " step " << step + 1 << " " << n);
        const double e = max_scaled_error(p, golden("optim." + name + ".step" + std::to_string(step + 1) + "." + n));
        CHECK(e < 2e-5);
        worst = std::max(worst, e);
      }
    }
    std::printf("parity optimizer %-13s max error over 10 steps %.2e\n", name.c_str(), worst);
  }
}

TEST_CASE("schedules: warm-up and each decay shape", "[optim]") {
  const auto lin = LrSchedule::linear(1.f, 4, 12);
  CHECK(lin.at(0) == 0.f);
  CHECK(lin.at(2) == Approx(0.5f));
  CHECK(lin.at(4) == Approx(1.f));
  CHECK(lin.at(8) == Approx(0.5f));
  CHECK(lin.at(12) == 0.f);
  CHECK(lin.at(50) == 0.f);
  const auto cos = LrSchedule::cosine(1.f, 0, 10);
  CHECK(cos.at(0) == Approx(1.f));
  CHECK(cos.at(5) == Approx(0.5f));
  CHECK(cos.at(10) == Approx(0.f).margin(1e-7));
  const auto poly = LrSchedule::polynomial(1.f, 2, 10, 0.1f, 2.f);
  CHECK(poly.at(6) == Approx(0.9f * 0.25f + 0.1f));
  CHECK(poly.at(20) == Approx(0.1f));
  const auto isr = LrSchedule::inverse_sqrt(1.f, 4);
  CHECK(isr.at(2) == Approx(0.5f));
  CHECK(isr.at(16) == Approx(0.5f));
  CHECK(LrSchedule::inverse_sqrt(1.f, 0).at(100) == Approx(1.0 / std::sqrt(1.01)));  // transformers' timescale 10,000
  CHECK(LrSchedule::inverse_sqrt(1.f, 0).at(30000) == Approx(0.5f));
  CHECK(LrSchedule::constant(0.3f).at(1000) == Approx(0.3f));
  // a schedule survives a JSON round trip, so a resumed run uses the same rates
  CHECK(LrSchedule::from_json(poly.to_json()).at(7) == poly.at(7));
  CHECK_THROWS_WITH(LrSchedule::linear(1.f, 10, 5).validate(), Catch::Matchers::Contains("total_steps"));
  CHECK_THROWS_WITH(LrSchedule::kind_from_name("exp"), Catch::Matchers::Contains("'exp'"));
}

TEST_CASE("gradient clipping matches torch.nn.utils.clip_grad_norm_", "[optim][parity]") {
  Tiny m;
  load_init(m);
  loss_of(m).backward();
  const float norm = clip_grad_norm(m.parameters(), 0.05f);
  CHECK(norm == Approx(golden("clip.norm").item()).epsilon(1e-5));
  for (auto& [n, p] : m.named_parameters()) CHECK(max_scaled_error(p.grad(), golden("clip.grad." + n)) < 1e-6);
  // below the threshold nothing changes
  const float again = clip_grad_norm(m.parameters(), 10.f);
  CHECK(again == Approx(0.05f).epsilon(1e-4));
}

TEST_CASE("accumulating 4 micro-batches equals one batch 4x larger", "[optim]") {
  Generator gen(3);
  const Tensor x = Tensor::normal({8, 4}, 0.f, 1.f, gen), y = Tensor::normal({8, 3}, 0.f, 1.f, gen);
  Tiny big, small;
  load_init(big);
  load_init(small);
  AdamW opt_big(bert_param_groups(big.named_parameters(), 0.01f), 0.05f);
  AdamW opt_small(bert_param_groups(small.named_parameters(), 0.01f), 0.05f);
  GradientAccumulator acc(4);
  for (int step = 0; step < 3; ++step) {
    mse_loss(big.forward(x), y).backward();
    opt_big.step();
    opt_big.zero_grad();
    for (long i = 0; i < 4; ++i) {
      mul(mse_loss(small.forward(slice(x, 0, 2 * i, 2 * i + 2)), slice(y, 0, 2 * i, 2 * i + 2)),
          Tensor::scalar(acc.loss_scale()))
          .backward();
      if (acc.micro_step()) {
        CHECK(i == 3);
        opt_small.step();
        opt_small.zero_grad();
      }
    }
  }
  auto a = big.named_parameters(), b = small.named_parameters();
  for (size_t i = 0; i < a.size(); ++i) CHECK(max_scaled_error(b[i].second, a[i].second) < 1e-6);
}

TEST_CASE("optimizer state saves and resumes to the same trajectory", "[optim]") {
  const auto dir = std::filesystem::path(temp_path("xgrad_optim_state"));
  std::filesystem::create_directories(dir);
  const std::string prefix = (dir / "adamw").string();
  Tiny a, b;
  load_init(a);
  auto opt_a = std::make_unique<AdamW>(bert_param_groups(a.named_parameters(), 0.01f), 0.1f);
  for (int s = 0; s < 3; ++s) {
    opt_a->zero_grad();
    loss_of(a).backward();
    opt_a->step();
  }
  opt_a->save_state(prefix);
  safetensors::save(a, (dir / "model.safetensors").string());
  for (int s = 0; s < 2; ++s) {
    opt_a->zero_grad();
    loss_of(a).backward();
    opt_a->step();
  }
  safetensors::load(b, (dir / "model.safetensors").string());
  AdamW opt_b(bert_param_groups(b.named_parameters(), 0.01f), 0.5f);
  opt_b.load_state(prefix);
  CHECK(opt_b.steps() == 3);
  CHECK(opt_b.lr() == 0.1f);
  for (int s = 0; s < 2; ++s) {
    opt_b.zero_grad();
    loss_of(b).backward();
    opt_b.step();
  }
  auto pa = a.named_parameters(), pb = b.named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) CHECK(pa[i].second.to_vector() == pb[i].second.to_vector());
  // a different optimizer refuses the state
  Sgd sgd(bert_param_groups(b.named_parameters(), 0.f), 0.1f);
  CHECK_THROWS_WITH(sgd.load_state(prefix), Catch::Matchers::Contains("adamw"));
  // a state JSON whose step or rate is not one is refused, naming the value
  const nlohmann::json good = opt_a->state_json();
  for (const auto& [field, value, message] : {std::tuple{"step", nlohmann::json(3.7), "step 3.7 is not a step count"},
                                             {"step", nlohmann::json(-5), "step -5 is not a step count"},
                                             {"step", nlohmann::json("3"), "is not a step count"},
                                             {"lr", nlohmann::json(1e39), "is not a finite rate"},
                                             {"lr", nlohmann::json(-0.1), "lr -0.1 is not a finite rate"}}) {
    nlohmann::json bad = good;
    bad[field] = value;
    std::ofstream(prefix + ".json") << bad.dump();
    AdamW fresh(bert_param_groups(b.named_parameters(), 0.01f), 0.5f);
    CHECK_THROWS_WITH(fresh.load_state(prefix), Catch::Matchers::Contains(message) && Catch::Matchers::Contains(prefix + ".json"));
  }
  // a NaN or infinite moment is refused, naming the tensor and element (the first update would make
  // the weights NaN, and the run would then blame its learning rate)
  std::ofstream(prefix + ".json") << good.dump();
  nn::StateDict moments = safetensors::read_float_tensors(prefix + ".safetensors");
  REQUIRE(!moments.empty());
  const std::string damaged = moments.begin()->first;
  for (const float bad : {std::nanf(""), INFINITY}) {
    nn::StateDict copy = moments;
    Tensor t = copy.at(damaged).contiguous().clone();
    t.data()[1] = bad;
    copy[damaged] = t;
    safetensors::write(prefix + ".safetensors", copy);
    AdamW fresh(bert_param_groups(b.named_parameters(), 0.01f), 0.5f);
    CHECK_THROWS_WITH(fresh.load_state(prefix), Catch::Matchers::Contains("state '" + damaged + "' holds") &&
                                                    Catch::Matchers::Contains("at element 1") &&
                                                    Catch::Matchers::Contains(prefix + ".safetensors"));
    CHECK(fresh.steps() == 0);  // nothing was loaded
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a group's lr_scale trains it as the rate lr * lr_scale would", "[optim]") {
  // Layer-wise decay rests on this: every optimizer, scaled groups against a smaller rate.
  for (const std::string name : kOptimizers) {
    INFO(name);
    Tiny scaled, reference;
    load_init(scaled);
    load_init(reference);
    auto groups = bert_param_groups(scaled.named_parameters(), 0.01f);
    for (auto& g : groups) g.lr_scale = 0.25f;
    const std::unique_ptr<Optimizer> a = make(name, groups, 0.1f),
                                     b = make(name, bert_param_groups(reference.named_parameters(), 0.01f), 0.025f);
    for (int step = 0; step < 5; ++step)
      for (auto [m, opt] : {std::pair<Tiny*, Optimizer*>{&scaled, a.get()}, {&reference, b.get()}}) {
        opt->zero_grad();
        loss_of(*m).backward();
        opt->step();
      }
    const auto ref = reference.named_parameters();
    size_t i = 0;
    for (auto& [n, p] : scaled.named_parameters()) {
      INFO(n);
      CHECK(max_scaled_error(p, ref[i++].second) < 1e-6);
    }
  }
  SECTION("lr_scale 0 leaves a group as it was, and a negative scale is refused") {
    Tiny m;
    load_init(m);
    auto groups = bert_param_groups(m.named_parameters(), 0.01f);
    groups[0].lr_scale = 0.f;  // the decayed weights
    const Tensor before = m.dense->weight.clone();
    AdamW opt(groups, 0.1f);
    opt.zero_grad();
    loss_of(m).backward();
    opt.step();
    CHECK(max_scaled_error(m.dense->weight, before) == 0.0);
    groups[0].lr_scale = -1.f;
    CHECK_THROWS_WITH(AdamW(groups, 0.1f), Catch::Contains("lr_scale -1"));
  }
}

TEST_CASE("LAMB gives the same bits on any thread count", "[optim]") {
  // 40,000 weights: three of the blocks its norms are summed in, shared out over threads
  auto run = [](int threads) {
    RestoreThreads restore;
    set_num_threads(threads);
    Generator gen(7);
    Tensor w = Tensor::normal({200, 200}, 0.f, 0.5f, gen).requires_grad_(true);
    Lamb opt({ParamGroup{{{"w", w}}, 0.01f}}, 0.01f);
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      sum(mul(mul(w, w), w)).backward();
      opt.step();
    }
    return w.to_vector();
  };
  const auto one = run(1), two = run(2);
  CHECK(one == two);
  CHECK(one != Tensor::normal({200, 200}, 0.f, 0.5f, *std::make_unique<Generator>(7)).to_vector());
}

TEST_CASE("Adam, AdamW and LAMB count steps per parameter, as PyTorch's state['step']", "[optim]") {
  // A multi-task head that sat out the first step takes its first update with the bias
  // corrections of step 1, as a fresh optimizer would give it, and keeps its own count across a
  // save and load.
  const auto dir = std::filesystem::path(temp_path("xgrad_optim_counts"));
  std::filesystem::create_directories(dir);
  for (const std::string kind : {"adam", "adamw", "lamb"}) {
    INFO(kind);
    auto make_opt = [&](std::vector<ParamGroup> groups) -> std::unique_ptr<Optimizer> {
      if (kind == "adam") return std::make_unique<Adam>(groups, 0.05f);
      if (kind == "adamw") return std::make_unique<AdamW>(groups, 0.05f);
      return std::make_unique<Lamb>(groups, 0.05f);
    };
    auto params = [] {
      Generator gen(3);
      return std::pair{Tensor::normal({5}, 0.f, 1.f, gen).requires_grad_(true),
                       Tensor::normal({5}, 0.f, 1.f, gen).requires_grad_(true)};
    };
    auto step = [](Optimizer& opt, std::vector<Tensor> used) {
      opt.zero_grad();
      Tensor loss = sum(mul(mul(used[0], used[0]), used[0]));
      for (size_t i = 1; i < used.size(); ++i) loss = add(loss, sum(mul(mul(used[i], used[i]), used[i])));
      loss.backward();
      opt.step();
    };
    auto [a, head] = params();
    auto opt = make_opt({ParamGroup{{{"a", a}, {"head", head}}, 0.01f}});
    step(*opt, {a});        // the head gets no gradient
    step(*opt, {a, head});  // its first update
    CHECK(opt->parameter_steps("a") == 2);
    CHECK(opt->parameter_steps("head") == 1);
    auto [unused, fresh_head] = params();
    auto fresh = make_opt({ParamGroup{{{"head", fresh_head}}, 0.01f}});
    step(*fresh, {fresh_head});
    CHECK(head.to_vector() == fresh_head.to_vector());

    // the count survives a save and load: the next step matches the uninterrupted one
    const std::string prefix = (dir / kind).string();
    opt->save_state(prefix);
    CHECK(opt->state_json().at("parameter_steps") == nlohmann::json{{"head", 1}});
    auto loaded = make_opt({ParamGroup{{{"a", a.clone().requires_grad_(true)}, {"head", head.clone().requires_grad_(true)}}, 0.01f}});
    loaded->load_state(prefix);
    CHECK(loaded->parameter_steps("head") == 1);
    Tensor a2 = loaded->groups()[0].params[0].second, head2 = loaded->groups()[0].params[1].second;
    step(*opt, {a, head});
    step(*loaded, {a2, head2});
    CHECK(head.to_vector() == head2.to_vector());

    // state saved before the counts existed: every parameter at the global step
    nlohmann::json old = opt->state_json();
    old.erase("parameter_steps");
    std::ofstream(prefix + ".json") << old.dump();
    loaded->load_state(prefix);
    CHECK(loaded->parameter_steps("head") == 3);
    // ... except one with no state, never updated: a head not sampled yet starts from step 1
    {
      auto [a3, untouched] = params();
      auto early = make_opt({ParamGroup{{{"a", a3}, {"head", untouched}}, 0.01f}});
      step(*early, {a3});
      early->save_state(prefix + "_early");
      nlohmann::json j = early->state_json();
      CHECK(j.at("parameter_steps") == nlohmann::json{{"head", 0}});
      j.erase("parameter_steps");
      std::ofstream(prefix + "_early.json") << j.dump();
      auto resumed = make_opt({ParamGroup{{{"a", a3.clone().requires_grad_(true)}, {"head", untouched.clone().requires_grad_(true)}}, 0.01f}});
      resumed->load_state(prefix + "_early");
      CHECK(resumed->parameter_steps("a") == 1);
      CHECK(resumed->parameter_steps("head") == 0);
    }
    for (const auto& [counts, message] :
         {std::pair{nlohmann::json{{"head", 4}}, "parameter_steps['head'] 4 is not a count up to step 3"},
          {nlohmann::json{{"head", -1}}, "parameter_steps['head'] -1"},
          {nlohmann::json{{"nothing", 1}}, "names 'nothing', no parameter"},
          {nlohmann::json::array(), "is not an object"}}) {
      nlohmann::json bad = old;
      bad["parameter_steps"] = counts;
      std::ofstream(prefix + ".json") << bad.dump();
      CHECK_THROWS_WITH(loaded->load_state(prefix), Catch::Matchers::Contains(message));
      CHECK(loaded->parameter_steps("head") == 3);  // left as it was
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("bert_param_groups: no decay for biases, LayerNorm weights and any vector, whatever its name", "[optim]") {
  const NamedTensors params{{"dense.weight", Tensor::zeros({3, 4}, true)}, {"dense.bias", Tensor::zeros({3}, true)},
                            {"embeddings.LayerNorm.weight", Tensor::zeros({4}, true)},
                            {"norm.weight", Tensor::zeros({4}, true)},  // a model's own name for a LayerNorm
                            {"word_embeddings.weight", Tensor::zeros({10, 4}, true)}};
  const auto groups = bert_param_groups(params, 0.01f);
  REQUIRE(groups.size() == 2);
  std::vector<std::string> decayed, kept;
  for (const auto& [n, _] : groups[0].params) decayed.push_back(n);
  for (const auto& [n, _] : groups[1].params) kept.push_back(n);
  CHECK(decayed == std::vector<std::string>{"dense.weight", "word_embeddings.weight"});
  CHECK(kept == std::vector<std::string>{"dense.bias", "embeddings.LayerNorm.weight", "norm.weight"});
  CHECK(groups[0].weight_decay == 0.01f);
  CHECK(groups[1].weight_decay == 0.f);
  CHECK_FALSE(groups[1].layer_adaptation);
}

TEST_CASE("an optimizer refuses what it could not train, and keeps frozen parameters for when they thaw", "[optim][errors]") {
  using Catch::Matchers::Contains;
  Tensor w = Tensor::ones({2}, true), b = Tensor::ones({2}, true);
  CHECK_THROWS_WITH(Sgd({{{{"w", w * 2.f}}}}, 0.1f), Contains("'w'") && Contains("'mul'") && Contains("not a leaf"));
  CHECK_THROWS_WITH(Sgd({{{{"w", Tensor()}}}}, 0.1f), Contains("'w' is undefined"));
  CHECK_THROWS_WITH(Sgd({{{{"w", w}}, 0.01f}, {{{"w_again", w}}, 0.f}}, 0.1f),
                    Contains("'w' is in group 0") && Contains("'w_again'") && Contains("group 1"));
  Sgd tied({{{{"w", w}, {"w_tied", w}}}}, 0.1f);  // one tensor under two names in a group: stepped once
  CHECK(tied.groups()[0].params.size() == 1);
  b.requires_grad_(false);
  Sgd opt({{{{"w", w}, {"b", b}}}}, 0.5f);
  b.requires_grad_(true);  // thawed after the optimizer was built
  sum(w * b).backward();
  opt.step();
  CHECK(b.to_vector() == std::vector<float>{0.5f, 0.5f});
  CHECK(w.to_vector() == std::vector<float>{0.5f, 0.5f});
}

TEST_CASE("optimizers take model.parameters() and model.named_parameters() as PyTorch's do", "[optim]") {
  Tiny grouped, positional, named;
  for (Tiny* m : {&grouped, &positional, &named}) load_init(*m);
  AdamW by_groups({{grouped.named_parameters()}}, 0.05f);
  AdamW by_position(positional.parameters(), 0.05f);
  AdamW by_name(named.named_parameters(), 0.05f);
  for (int step = 0; step < 3; ++step)
    for (auto [m, opt] : {std::pair{&grouped, &by_groups}, {&positional, &by_position}, {&named, &by_name}}) {
      opt->zero_grad();
      loss_of(*m).backward();
      opt->step();
    }
  const auto a = grouped.named_parameters(), b = positional.named_parameters(), c = named.named_parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(b[i].second.to_vector() == a[i].second.to_vector());
    CHECK(c[i].second.to_vector() == a[i].second.to_vector());
  }
  // state by position, as torch.optim numbers it, and by name
  CHECK(by_position.state_tensors().count("0.exp_avg") == 1);
  CHECK(by_position.state_tensors().count(std::to_string(a.size() - 1) + ".exp_avg_sq") == 1);
  CHECK(by_name.state_tensors().count("dense.weight.exp_avg") == 1);
}
