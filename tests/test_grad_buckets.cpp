// Gradient buckets over the flat arena: each fires once per backward pass, as soon as its
// gradients are final, in the order backward finishes them; unused parameters are flushed by
// finish_backward().
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "nn/nn.hpp"

using namespace xg;
using namespace xg::nn;

namespace {
// A stack of linears; `unused` is registered but never called.
class Stack : public Module {
 public:
  explicit Stack(size_t depth) {
    for (size_t i = 0; i < depth; ++i) layers.push_back(register_module("layer" + std::to_string(i), std::make_shared<Linear>(8, 8)));
    unused = register_module("unused", std::make_shared<Linear>(8, 8));
  }
  Tensor forward(const Tensor& x, bool checkpointed = false) {
    Tensor h = x;
    for (auto& l : layers) {
      auto run = [l](const std::vector<Tensor>& in) { return tanh(l->forward(in[0])); };
      h = checkpointed ? checkpoint(run, {h}, {l->weight, l->bias}) : run({h});
    }
    return sum(mul(h, h));
  }
  std::vector<std::shared_ptr<Linear>> layers;
  std::shared_ptr<Linear> unused;
};

struct Firing {
  size_t bucket;
  std::vector<float> grads;  // the bucket's range when it fired
};
}  // namespace

TEST_CASE("grad buckets: partition the trainable entries into contiguous ranges, last layers first", "[nn][arena][buckets]") {
  Stack net(4);
  net.layers[1]->requires_grad_(false);
  ParameterArena& arena = net.flatten_parameters();
  GradientBuckets buckets(arena, 8 * 9 * sizeof(float), [](const GradientBuckets::Bucket&, const Tensor&) {});
  std::vector<int> covered(arena.entries().size(), 0);
  size_t previous_offset = arena.numel();
  for (const auto& b : buckets.buckets()) {
    CHECK(b.offset + b.numel <= previous_offset);  // each bucket lies below the one before
    previous_offset = b.offset;
    for (size_t e : b.entries) {
      ++covered[e];
      CHECK(arena.entries()[e].offset >= b.offset);
      CHECK(arena.entries()[e].offset + arena.entries()[e].numel <= b.offset + b.numel);
    }
  }
  for (size_t e = 0; e < covered.size(); ++e)
    CHECK(covered[e] == (arena.entries()[e].param.requires_grad() ? 1 : 0));
  CHECK(buckets.buckets().front().entries.front() == arena.entries().size() - 1);  // "unused.bias"
  CHECK_THROWS_WITH(GradientBuckets(arena, 0, [](const GradientBuckets::Bucket&, const Tensor&) {}),
                    Catch::Matchers::Contains("bucket_bytes"));
}

TEST_CASE("grad buckets: each bucket fires once per pass, with its final gradients", "[nn][arena][buckets]") {
  for (const bool checkpointed : {false, true}) {
    SECTION(checkpointed ? "with checkpointed layers" : "plain") {
      Stack net(5);
      ParameterArena& arena = net.flatten_parameters();
      std::vector<Firing> fired;
      bool in_backward = false;
      std::vector<bool> fired_in_backward;
      GradientBuckets buckets(arena, 8 * 9 * sizeof(float) * 2, [&](const GradientBuckets::Bucket& b, const Tensor& g) {
        fired.push_back({b.index, g.to_vector()});
        fired_in_backward.push_back(in_backward);
      });
      REQUIRE(buckets.buckets().size() >= 3);
      Generator gen(3);
      for (int pass = 0; pass < 2; ++pass) {
        fired.clear();
        fired_in_backward.clear();
        net.zero_grad();
        if (pass == 1) {  // stale slots: none may reach a bucket (`unused` gets no gradient)
          float* grads = arena.flat_grads().data();
          for (const auto& e : arena.entries())
            std::fill_n(grads + e.offset, e.numel, std::numeric_limits<float>::quiet_NaN());
        }
        const Tensor x = Tensor::normal({4, 8}, 0.f, 1.f, gen);
        in_backward = true;
        net.forward(x, checkpointed).backward();
        in_backward = false;
        buckets.finish_backward();
        REQUIRE(fired.size() == buckets.buckets().size());
        std::map<size_t, int> times;
        for (const auto& f : fired) ++times[f.bucket];
        for (const auto& [b, n] : times) CHECK(n == 1);
        // What each bucket saw when it fired is what its range holds after the pass.
        const std::vector<float> all = arena.flat_grads().to_vector();
        for (const auto& f : fired) {
          const auto& b = buckets.buckets()[f.bucket];
          CHECK(f.grads == std::vector<float>(all.begin() + long(b.offset), all.begin() + long(b.offset + b.numel)));
        }
        // The bucket holding `unused` (the first) can only be flushed after the pass; the others
        // fire during backward, last layers first.
        CHECK(fired.back().bucket == 0);
        CHECK_FALSE(fired_in_backward.back());
        for (size_t i = 0; i + 1 < fired.size(); ++i) CHECK(fired_in_backward[i]);
        for (size_t i = 1; i + 1 < fired.size(); ++i) CHECK(fired[i].bucket > fired[i - 1].bucket);
      }
    }
  }
}

TEST_CASE("grad buckets: what a reduce wrote into a slot with no gradient counts in this step, not the next", "[nn][arena][buckets]") {
  // The callback stands in for an all-reduce that writes the whole range, `unused`'s slots too
  // (another rank's gradient): this step's norm reads all of it, on every rank alike; gradients
  // are dropped tensor by tensor (not by the arena's zero_grad) between the passes.
  Stack net(2);
  ParameterArena& arena = net.flatten_parameters();
  size_t unused_offset = 0, unused_end = 0;
  for (const auto& e : arena.entries()) {
    if (e.param.impl() == net.unused->weight.impl()) unused_offset = e.offset;
    if (e.param.impl() == net.unused->bias.impl()) unused_end = e.offset + e.numel;
  }
  REQUIRE(unused_end > unused_offset);
  std::vector<float> unused_seen;
  GradientBuckets buckets(arena, 1 << 20, [&](const GradientBuckets::Bucket& b, const Tensor& g) {
    const std::vector<float> all = g.to_vector();
    unused_seen.assign(all.begin() + long(unused_offset - b.offset), all.begin() + long(unused_end - b.offset));
    float* data = const_cast<float*>(g.data());
    std::fill_n(data, g.numel(), 7.f);
  });
  REQUIRE(buckets.buckets().size() == 1);
  Generator gen(5);
  for (int pass = 0; pass < 2; ++pass) {
    INFO("pass " << pass);
    for (auto& [_, p] : net.named_parameters()) p.zero_grad();
    net.forward(Tensor::normal({4, 8}, 0.f, 1.f, gen)).backward();
    buckets.finish_backward();
    CHECK(unused_seen == std::vector<float>(unused_end - unused_offset, 0.f));
    REQUIRE_FALSE(net.unused->weight.grad().defined());
    const double written = double(buckets.buckets()[0].numel);
    CHECK(arena.grad_norm() == Approx(7.0 * std::sqrt(written)).epsilon(1e-12));
  }
}
