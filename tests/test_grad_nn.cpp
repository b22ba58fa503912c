// Finite-difference gradient tests: softmax family, layer_norm, dropout, losses, and an
// attention block composed from the ops.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>

#include "autograd/parallel.hpp"
#include "tests/gradcheck.hpp"
#include "tests/thread_count.hpp"
#include "util/random.hpp"

using namespace xg;
using xg::test::check_gradients;
using xg::test::randn;
using V = std::vector<Tensor>;

TEST_CASE("grad: softmax and log_softmax on the last and on an inner axis", "[grad][nn]") {
  const Tensor x = randn({3, 4, 5}, 60);
  check_gradients([](const V& v) { return softmax(v[0]); }, {x});
  check_gradients([](const V& v) { return softmax(v[0], 1); }, {x});
  check_gradients([](const V& v) { return log_softmax(v[0]); }, {x});
  check_gradients([](const V& v) { return log_softmax(v[0], 0); }, {x});
}

TEST_CASE("grad: layer_norm with and without affine parameters", "[grad][nn]") {
  const Tensor x = randn({4, 19}, 61, 2.f), w = randn({19}, 62), b = randn({19}, 63);
  check_gradients([](const V& v) { return layer_norm(v[0], v[1], v[2], 1e-5f); }, {x, w, b});
  check_gradients([](const V& v) { return layer_norm(v[0], Tensor(), Tensor(), 1e-5f); }, {x});
  // 3-D input, sizes past the SIMD width, and the row split across threads
  const Tensor big = randn({3, 40, 37}, 64), w2 = randn({37}, 65), b2 = randn({37}, 66);
  check_gradients([](const V& v) { return layer_norm(v[0], v[1], v[2], 1e-12f); }, {big, w2, b2});
  // strided weight and bias (views): their gradients still reach the tensors they view
  const Tensor s = randn({1}, 67), t = randn({1}, 68);
  check_gradients([](const V& v) { return layer_norm(v[0], expand(v[1], {19}), expand(v[2], {19}), 1e-5f); }, {x, s, t});
}

TEST_CASE("grad: dropout with a fixed mask, identity in eval", "[grad][nn]") {
  const Tensor x = randn({8, 16}, 67);
  check_gradients(
      [](const V& v) {
        Generator g(7);  // the same mask on every call
        return dropout(v[0], 0.3f, /*training=*/true, g);
      },
      {x});
  Generator g(7);
  Tensor y = dropout(x, 0.3f, /*training=*/false, g);
  CHECK(y.same_storage(x));
}

TEST_CASE("dropout: the mask follows its documented draws, for any thread count", "[nn]") {
  // Chunks of 16384 elements, chunk c drawn from Generator(seed + 0x9e3779b97f4a7c15 * (c + 1)),
  // elements 2j and 2j + 1 from the low and high halves of draw j. Checkpoints' resume and the
  // recomputed backward rely on the masks staying what they were; this pins them.
  // Three, six and nine chunks, the last odd: tasks of 2, 4 or 8 chunks side by side (SSE2, AVX2,
  // AVX-512), the short chunk alone in its task or beside full ones.
  for (const size_t n : {2 * 16384 + 1001, 5 * 16384 + 1001, 8 * 16384 + 1001}) {
    INFO("n " << n);
    const Tensor x = randn({n}, 68);
    const float p = 0.3f, scale = 1.f / (1.f - p);
    const uint64_t threshold = uint64_t(double(p) * 4294967296.0);
    Generator seeds(11);
    const uint64_t seed = seeds.next_u64();
    std::vector<float> expected(n);
    for (size_t c = 0; c * 16384 < n; ++c) {
      Generator g(seed + 0x9e3779b97f4a7c15ULL * (c + 1));
      uint64_t draw = 0;
      for (size_t i = c * 16384; i < std::min(n, (c + 1) * 16384); ++i) {
        if ((i - c * 16384) % 2 == 0) draw = g.next_u64();
        const uint64_t bits = (i - c * 16384) % 2 == 0 ? draw & 0xffffffffu : draw >> 32;
        expected[i] = bits >= threshold ? x.data()[i] * scale : 0.f;
      }
    }
    RestoreThreads restore;  // also when a REQUIRE below throws
    for (int t : {1, 2, 3}) {
      set_num_threads(t);
      Generator g(11);
      const Tensor y = dropout(x, p, /*training=*/true, g);
      const auto first_difference = std::mismatch(expected.begin(), expected.end(), y.data()).first - expected.begin();
      INFO("threads " << t);
      CHECK(size_t(first_difference) == n);
    }
    Generator g(11);
    const Tensor all = dropout(x, 1.f, /*training=*/true, g);
    for (size_t i = 0; i < n; ++i) REQUIRE(all.data()[i] == 0.f);
  }
}

TEST_CASE("grad: cross_entropy with ignore_index, every reduction", "[grad][loss]") {
  const Tensor logits = randn({6, 5}, 70, 2.f);
  const std::vector<int64_t> t = {1, -100, 4, 0, 4, -100};
  check_gradients([t](const V& v) { return cross_entropy(v[0], t); }, {logits});
  check_gradients([t](const V& v) { return cross_entropy(v[0], t, -100, Reduction::Sum); }, {logits});
  check_gradients([t](const V& v) { return cross_entropy(v[0], t, -100, Reduction::None); }, {logits});
  // 3-D logits: rows are the leading axes flattened
  check_gradients([](const V& v) { return cross_entropy(v[0], {0, 2, 1, 2, 2, 0}); },
                  {randn({2, 3, 3}, 71)});
  // targets as an int64 tensor (the models' labels), every reduction
  const Tensor targets = Tensor::from_ints(t, {6});
  for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None})
    check_gradients([&](const V& v) { return cross_entropy(v[0], targets, -100, r); }, {logits});
}

TEST_CASE("grad: mse and bce_with_logits", "[grad][loss]") {
  const Tensor a = randn({3, 4}, 72), b = randn({3, 4}, 73);
  check_gradients([](const V& v) { return mse_loss(v[0], v[1]); }, {a, b});
  check_gradients([](const V& v) { return mse_loss(v[0], v[1], Reduction::Sum); }, {a, b});
  Generator g(74);
  Tensor targets = Tensor::uniform({3, 4}, 0.f, 1.f, g, true);
  check_gradients([](const V& v) { return bce_with_logits(v[0], v[1]); }, {randn({3, 4}, 75, 3.f), targets});
  check_gradients([](const V& v) { return bce_with_logits(v[0], v[1], Reduction::None); },
                  {randn({3, 4}, 76, 3.f), targets});
  check_gradients([](const V& v) { return mse_loss(v[0], v[1], Reduction::None); }, {a, b});
  check_gradients([](const V& v) { return bce_with_logits(v[0], v[1], Reduction::Sum); },
                  {randn({3, 4}, 77, 3.f), targets});
}

TEST_CASE("grad: masked multi-head attention composed from ops", "[grad][nn]") {
  // q, k, v: (B, H, T, D); mask (B, 1, 1, T) additive, -1e4 on padding
  const Tensor q = randn({2, 2, 3, 4}, 80), k = randn({2, 2, 3, 4}, 81), v = randn({2, 2, 3, 4}, 82);
  const Tensor mask = Tensor::from_vector({0, 0, -1e4f, 0, 0, 0}, {2, 1, 1, 3});
  check_gradients(
      [mask](const V& x) {
        Tensor scores = matmul(x[0], x[1], false, true) * (1.f / std::sqrt(4.f));
        return matmul(softmax(add(scores, mask)), x[2]);
      },
      {q, k, v});
}

TEST_CASE("grad: fused attention_softmax with and without a padding mask", "[grad][nn]") {
  const Tensor s = randn({2, 2, 3, 4}, 90, 2.f);
  const Tensor mask = Tensor::from_vector({0, 0, 0, -1e4f, 0, -1e4f, 0, 0}, {2, 4});
  check_gradients([mask](const V& v) { return attention_softmax(v[0], mask, 0.5f); }, {s});
  check_gradients([](const V& v) { return attention_softmax(v[0], Tensor(), 0.7f); }, {s});
  // equals the unfused composition
  Tensor fused = attention_softmax(s, mask, 0.5f);
  Tensor plain = softmax(add(mul(s, Tensor::scalar(0.5f)), reshape(mask, {2, 1, 1, 4})));
  for (size_t i = 0; i < fused.numel(); ++i) CHECK(fused.data()[i] == Approx(plain.data()[i]).margin(1e-7));
}

TEST_CASE("grad: cross_entropy with label smoothing", "[grad][loss]") {
  const Tensor logits = randn({5, 4}, 91, 2.f);
  const std::vector<int64_t> t = {1, 3, -100, 0, 2};
  check_gradients([t](const V& v) { return cross_entropy(v[0], t, -100, Reduction::Mean, 0.1f); }, {logits});
  check_gradients([t](const V& v) { return cross_entropy(v[0], t, -100, Reduction::Sum, 0.1f); }, {logits});
  check_gradients([t](const V& v) { return cross_entropy(v[0], t, -100, Reduction::None, 0.1f); }, {logits});
}

TEST_CASE("cross_entropy with label smoothing: each row's loss is PyTorch's formula, on wide rows", "[loss]") {
  // -(1-e) log p[t] - e mean_c log p[c], from log p in double; rows wide enough for the SIMD sums.
  const size_t N = 3, C = 30522;
  const Tensor logits = randn({N, C}, 17, 3.f);
  const std::vector<int64_t> t = {5, C - 1, 12345};
  const float e = 0.1f;
  const Tensor loss = cross_entropy(logits, t, -100, Reduction::None, e);
  for (size_t i = 0; i < N; ++i) {
    const float* x = logits.data() + i * C;
    double m = x[0], s = 0, sum_logp = 0;
    for (size_t c = 0; c < C; ++c) m = std::max(m, double(x[c]));
    for (size_t c = 0; c < C; ++c) s += std::exp(double(x[c]) - m);
    const double lse = m + std::log(s);
    for (size_t c = 0; c < C; ++c) sum_logp += double(x[c]) - lse;
    const double expected = -(1 - e) * (double(x[t[i]]) - lse) - e * sum_logp / double(C);
    INFO("row " << i);
    CHECK(loss.data()[i] == Approx(expected).epsilon(1e-6));
  }
}
