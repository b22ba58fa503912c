#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>

#include "autograd/xgrad.hpp"
#include "optim/optimizer.hpp"
#include "tests/thread_count.hpp"
#include "util/threads.hpp"

using namespace xg;
using Catch::Matchers::Contains;

TEST_CASE("backward accumulates into leaves across calls, zero_grad resets", "[engine]") {
  Tensor x = Tensor::from_vector({1, 2, 3}, {3}, true);
  sum(x * x).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{2, 4, 6});
  sum(x * 3.f).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{5, 7, 9});
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("backward with an explicit output gradient", "[engine]") {
  Tensor x = Tensor::from_vector({1, 2}, {2}, true);
  Tensor y = x * x;
  y.backward(Tensor::from_vector({1, 10}, {2}));
  CHECK(x.grad().to_vector() == std::vector<float>{2, 40});
  CHECK_THROWS_WITH((x * 2.f).backward(), Contains("[backward]") && Contains("[2]"));
  CHECK_THROWS_WITH((x * 2.f).backward(Tensor::ones({3})), Contains("[backward]") && Contains("[3]"));
}

TEST_CASE("no-grad guard records nothing", "[engine]") {
  Tensor x = Tensor::ones({2}, true);
  {
    NoGradGuard guard;
    Tensor y = x * 2.f;
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
  }
  CHECK((x * 2.f).requires_grad());
}

TEST_CASE("graph is freed after backward unless retained", "[engine]") {
  Tensor x = Tensor::ones({2}, true);
  Tensor loss = sum(exp(x));
  loss.backward(/*retain_graph=*/true);
  loss.backward();
  CHECK(x.grad().to_vector()[0] == Approx(2 * std::exp(1.f)));
  CHECK_THROWS_WITH(loss.backward(), Contains("freed") && Contains("retain_graph"));
}

TEST_CASE("a tensor an op saved for its backward and then changed in place is refused, naming the op", "[engine]") {
  Tensor x = Tensor::from_vector({1, 2}, {2}, true), w = Tensor::from_vector({3, 4}, {2}, true);
  SECTION("an input (mul reads w for x's gradient)") {
    Tensor loss = sum(x * w);
    w.copy_(Tensor::from_vector({5, 6}, {2}));
    CHECK_THROWS_WITH(loss.backward(), Contains("'mul'") && Contains("[2]") && Contains("changed in place"));
  }
  SECTION("an output (exp reads its result)") {
    Tensor y = exp(x);
    Tensor loss = sum(y * 2.f);
    y.copy_(Tensor::zeros({2}));
    CHECK_THROWS_WITH(loss.backward(), Contains("'exp'"));
  }
  SECTION("a view of a saved tensor's storage") {
    Tensor both = Tensor::from_vector({1, 2, 3, 4}, {2, 2}, true);
    Tensor loss = sum(log(slice(both, 0, 0, 1)));  // log reads its input
    slice(both.detach(), 0, 1, 2).copy_(Tensor::zeros({1, 2}));  // the other row: the storage is one
    CHECK_THROWS_WITH(loss.backward(), Contains("'log'"));
  }
  SECTION("an optimizer's step between the forward and the backward") {
    Tensor loss = sum(linear(x.reshape({1, 2}), w.reshape({1, 2}), Tensor()));
    sum(w * w).backward();
    optim::Sgd({{{{"w", w}}}}, 0.1f).step();
    CHECK_THROWS_WITH(loss.backward(), Contains("'linear'"));
  }
  SECTION("a retained graph back-propagated again after a change") {
    Tensor loss = sum(x * w);
    loss.backward(/*retain_graph=*/true);
    w.copy_(Tensor::from_vector({5, 6}, {2}));
    CHECK_THROWS_WITH(loss.backward(), Contains("'mul'"));
  }
  SECTION("a checkpointed function's weight, read again by the recomputation") {
    Tensor loss = sum(checkpoint([&](const std::vector<Tensor>& in) { return in[0] * w; }, {x}, {w}));
    w.copy_(Tensor::from_vector({5, 6}, {2}));
    CHECK_THROWS_WITH(loss.backward(), Contains("'checkpoint'"));
  }
}

TEST_CASE("what an op does not read for its backward may change in place, and so may anything after it", "[engine]") {
  Tensor a = Tensor::from_vector({1, 2}, {2}, true), b = Tensor::from_vector({3, 4}, {2}, true);
  Tensor loss = sum(a + b);  // add saves neither
  a.copy_(Tensor::from_vector({7, 8}, {2}));
  loss.backward();
  CHECK(a.grad().to_vector() == std::vector<float>{1, 1});
  Tensor c = Tensor::from_vector({2, 3}, {2});  // mul reads c only for a's gradient: a needs one
  Tensor only_c_needed = sum(c * b);
  b.copy_(Tensor::from_vector({0, 0}, {2}));  // b itself is not read: its gradient is c
  only_c_needed.backward();
  CHECK(b.grad().to_vector() == std::vector<float>{1 + 2, 1 + 3});
  Tensor after = sum(a * b);
  after.backward();
  a.copy_(Tensor::zeros({2}));  // the graph is released: nothing reads a any more
  const uint64_t before = a.version();
  a.bump_version();
  CHECK(a.version() == before + 1);
  CHECK(a.detach().version() == a.version());  // views share the count
}

TEST_CASE("intermediate activations die with their handles, not with the loss", "[engine]") {
  Tensor x = Tensor::ones({1000}, true);
  std::weak_ptr<Storage> hidden_storage;
  Tensor loss;
  {
    Tensor h = x * 2.f;  // relu saves x (a leaf), mul saves the scalar; h itself is not saved
    hidden_storage = h.impl()->storage;
    loss = sum(relu(h + 1.f));
  }
  CHECK(hidden_storage.expired());
  loss.backward();
  CHECK(x.grad().to_vector()[0] == 2.f);
}

TEST_CASE("a chain of 100,000 ops neither overflows on backward nor on destruction", "[engine]") {
  Tensor x = Tensor::scalar(1.f, true);
  {
    Tensor y = x;
    for (int i = 0; i < 100000; ++i) y = y * 1.0f;
    y.backward();
    CHECK(x.grad().item() == 1.f);
  }  // y and its 100,000 nodes are released here
  Tensor z = x;
  for (int i = 0; i < 100000; ++i) z = z + 0.f;
  z = Tensor();  // destruction without any backward
  SUCCEED();
}

TEST_CASE("gradients of ops not requiring grad are skipped", "[engine]") {
  Tensor w = Tensor::from_vector({2}, {1}, true);
  Tensor c = Tensor::from_vector({5}, {1});
  sum(w * c).backward();
  CHECK(w.grad().item() == 5.f);
  CHECK_FALSE(c.grad().defined());
}

TEST_CASE("thread count can be set at run time", "[engine][parallel]") {
  RestoreThreads restore;
  set_num_threads(1);
  CHECK(num_threads() == 1);
  std::vector<int> hits(100, 0);
  parallel_for(100, [&](size_t i) { hits[i]++; });
  set_num_threads(2);
  parallel_for(100, [&](size_t i) { hits[i]++; });
  CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 2; }));
  CHECK_THROWS_WITH(parallel_for(4, [](size_t i) { if (i == 2) throw std::runtime_error("task 2"); }),
                    Contains("task 2"));
  CHECK_THROWS_WITH(set_num_threads(0), Contains("[set_num_threads]"));
}

TEST_CASE("element-wise ops and the loss give the same bits on any thread count", "[engine][parallel]") {
  // 100,003 elements: several chunks, and a length no chunk boundary or SIMD width divides
  Generator gen(3);
  Tensor x = Tensor::normal({100003}, 0.f, 2.f, gen).requires_grad_(true);
  Tensor logits = Tensor::normal({37, 3001}, 0.f, 3.f, gen).requires_grad_(true);
  std::vector<int64_t> targets(37);
  for (size_t i = 0; i < targets.size(); ++i) targets[i] = int64_t(i * 81 % 3001);
  targets[5] = -100;  // ignored
  auto run = [&](int threads) {
    RestoreThreads restore;
    set_num_threads(threads);
    x.zero_grad();
    logits.zero_grad();
    const Tensor y = gelu(x);
    sum(mul(y, y)).backward();
    const Tensor loss = cross_entropy(logits, targets, -100, Reduction::Mean, 0.1f);
    loss.backward();
    return std::vector<std::vector<float>>{y.to_vector(), x.grad().to_vector(), loss.to_vector(), logits.grad().to_vector()};
  };
  CHECK(run(1) == run(2));
}

namespace {
// Makes thread starts fail from the n-th on while in scope, as the system does when out of threads.
struct RefusedThreadStarts {
  explicit RefusedThreadStarts(long n) { fail_thread_starts_after(n); }
  ~RefusedThreadStarts() { fail_thread_starts_after(-1); }
};
}  // namespace

TEST_CASE("a refused thread start names the work, the thread count and the remedy", "[engine][parallel]") {
  RestoreThreads restore;
  set_num_threads(1);
  {
    RefusedThreadStarts refused(1);  // the pool's second worker (thread 3, the caller being 1)
    CHECK_THROWS_WITH(set_num_threads(4), Contains("[threads] cannot start thread 3 of 4 for the tensor thread pool") &&
                                              Contains("XGRAD_NUM_THREADS=N"));
  }
  // The started worker was joined (an unjoined one would have ended the process) and the pool runs serially.
  CHECK(num_threads() == 1);
  std::vector<int> hits(10, 0);
  parallel_for(10, [&](size_t i) { hits[i]++; });
  CHECK(std::count(hits.begin(), hits.end(), 1) == 10);

  std::atomic<int> ran{0};
  {
    RefusedThreadStarts refused(2);
    CHECK_THROWS_WITH(run_on_threads(5, [&](size_t) { ++ran; }, "tokenizing corpus.txt"),
                      Contains("thread 4 of 5 for tokenizing corpus.txt"));
  }
  CHECK(ran == 2);  // the two started threads finished before the error left
  run_on_threads(3, [&](size_t) { ++ran; });
  CHECK(ran == 5);
}
