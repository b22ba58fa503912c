// multi_head_attention (autograd/kernels/flash_attention.hpp): the memory-linear attention op
// against the unfused composition it replaces (matmul, attention_softmax, matmul), forward and
// backward, at block boundaries, ragged head dims and padding; its dropout against a reference
// built from the same mask; finite differences; and bad shapes.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/kernels/flash_attention.hpp"
#include "autograd/ops.hpp"
#include "golden.hpp"
#include "gradcheck.hpp"
#include "models/albert/albert.hpp"
#include "models/bert/bert.hpp"
#include "models/bert/bert_heads.hpp"
#include "models/core/model_inputs.hpp"
#include "nn/init.hpp"
#include "nn/transformer.hpp"
#include "padding_mask.hpp"

using namespace xg;
using xg::test::padding_mask;
using xg::test::randn;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  REQUIRE(x.shape() == y.shape());
  double m = 0;
  for (size_t i = 0; i < x.numel(); ++i) m = std::max(m, std::abs(double(x.data()[i]) - y.data()[i]));
  return m;
}

double max_abs(const Tensor& a) {
  const Tensor x = a.contiguous();
  double m = 0;
  for (size_t i = 0; i < x.numel(); ++i) m = std::max(m, std::abs(double(x.data()[i])));
  return m;
}

struct Grads { Tensor out, dq, dk, dv; };

// out and the gradients of sum(w * out) for q, k, v, through `attend`.
template <class Attend>
Grads run_with_grads(const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& w, Attend attend) {
  Tensor q = q0.detach().clone(), k = k0.detach().clone(), v = v0.detach().clone();
  for (Tensor* t : {&q, &k, &v}) t->requires_grad_(true);
  Tensor out = attend(q, k, v);
  sum(mul(out, w)).backward();
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

}  // namespace

TEST_CASE("flash attention: forward and backward equal the unfused composition", "[flash]") {
  // Tq: queries per sequence when not the keys' T (a layer read at a few rows), 0: T
  struct Case { size_t B, T, heads, hd; std::vector<size_t> lengths; size_t Tq = 0; };
  const std::vector<Case> cases = {
      {2, 1, 2, 8, {1, 1}},          // one token
      {3, 64, 4, 16, {64, 30, 1}},   // exactly one block
      {2, 65, 2, 20, {65, 64}},      // a block and one key; head dim not a SIMD multiple
      {1, 130, 12, 64, {}},          // BERT-base heads, three blocks (the last of 2), no mask
      {2, 200, 2, 32, {200, 77}},    // MiniLM's head dim
      {1, 9, 3, 24, {5}},
      {3, 70, 2, 16, {0, 70, 33}},   // every key masked (lowest()): uniform weights, as unfused
      {2, 90, 2, 16, {90, 51}, 70},  // fewer queries than keys, more than a block of each
      {2, 130, 12, 64, {130, 66}, 21},  // BERT-base's sparse last layer at 8 x 128's rows
      {1, 9, 3, 24, {5}, 12},        // more queries than keys (rows repeated)
      {3, 70, 2, 16, {0, 70, 33}, 5},
      {2, 0, 2, 8, {}, 3},           // queries without keys: zero output and gradients, both ways
  };
  for (const Case& c : cases) {
    CAPTURE(c.B, c.T, c.heads, c.hd, c.Tq);
    const size_t H = c.heads * c.hd, Tq = c.Tq ? c.Tq : c.T;
    const Tensor q = randn({c.B, Tq, H}, 11, 1.5f), k = randn({c.B, c.T, H}, 12, 1.5f);
    const Tensor v = randn({c.B, c.T, H}, 13), w = randn({c.B, Tq, H}, 14);
    const Tensor mask = c.lengths.empty() ? Tensor() : padding_mask(c.lengths, c.T);
    const Grads flash = run_with_grads(q, k, v, w, [&](const Tensor& a, const Tensor& b, const Tensor& d) {
      return multi_head_attention(a, b, d, mask, c.heads, 0.f, true);
    });
    const Grads plain = run_with_grads(q, k, v, w, [&](const Tensor& a, const Tensor& b, const Tensor& d) {
      return unfused_multi_head_attention(a, b, d, mask, c.heads, 0.f, false);
    });
    CHECK(max_abs_diff(flash.out, plain.out) <= 2e-6 * std::max(1.0, max_abs(plain.out)));
    CHECK(max_abs_diff(flash.dq, plain.dq) <= 1e-5 * std::max(1.0, max_abs(plain.dq)));
    CHECK(max_abs_diff(flash.dk, plain.dk) <= 1e-5 * std::max(1.0, max_abs(plain.dk)));
    CHECK(max_abs_diff(flash.dv, plain.dv) <= 1e-5 * std::max(1.0, max_abs(plain.dv)));
  }
  // queries without keys: zero, as the unfused softmax over no key gives (not left unwritten)
  const Tensor no_keys = randn({2, 0, 16}, 15);
  const Tensor out = multi_head_attention(randn({2, 3, 16}, 16), no_keys, no_keys, Tensor(), 2, 0.f, false);
  CHECK(out.shape() == Shape{2, 3, 16});
  CHECK(max_abs(out) == 0.0);
}

TEST_CASE("flash attention: finite differences, with and without dropout", "[flash][grad]") {
  const Tensor q = randn({2, 70, 8}, 21), k = randn({2, 70, 8}, 22), v = randn({2, 70, 8}, 23);
  const Tensor mask = padding_mask({70, 40}, 70);
  test::GradCheckOptions opt;
  opt.max_checks = 24;
  test::check_gradients([&](const std::vector<Tensor>& x) { return multi_head_attention(x[0], x[1], x[2], mask, 2, 0.f, true); },
                        {q, k, v}, opt);
  // Dropout: a fresh generator with one seed per evaluation, so every evaluation drops the same weights.
  test::check_gradients(
      [&](const std::vector<Tensor>& x) {
        Generator gen(99);
        return multi_head_attention(x[0], x[1], x[2], mask, 2, 0.3f, true, gen);
      },
      {q, k, v}, opt);
  // fewer queries than keys, dropout included
  const Tensor few_q = randn({2, 20, 8}, 24);
  test::check_gradients(
      [&](const std::vector<Tensor>& x) {
        Generator gen(97);
        return multi_head_attention(x[0], x[1], x[2], mask, 2, 0.3f, true, gen);
      },
      {few_q, k, v}, opt);
  // the unfused composition it is compared with, its dropout path included
  test::check_gradients(
      [&](const std::vector<Tensor>& x) {
        Generator gen(98);
        return unfused_multi_head_attention(x[0], x[1], x[2], mask, 2, 0.3f, true, gen);
      },
      {q, k, v}, opt);
}

TEST_CASE("flash attention: dropout drops each weight with probability p and scales the rest", "[flash]") {
  const size_t B = 2, T = 70, heads = 2, hd = 8, H = heads * hd;
  const float p = 0.25f;
  const Tensor q = randn({B, T, H}, 31), k = randn({B, T, H}, 32), v = randn({B, T, H}, 33);
  const Tensor mask = padding_mask({70, 50}, T);
  Generator gen(7);
  const uint64_t seed = Generator(7).next_u64();  // the op draws one seed per call
  const Tensor out = multi_head_attention(q, k, v, mask, heads, p, true, gen).contiguous();
  // Reference in double: softmax weights times keep / (1 - p), from the kernel's own mask.
  size_t dropped = 0, total = 0;
  double worst = 0;
  for (size_t b = 0; b < B; ++b)
    for (size_t h = 0; h < heads; ++h)
      for (size_t i = 0; i < T; ++i) {
        std::vector<double> s(T);
        double mx = -INFINITY, denom = 0;
        for (size_t j = 0; j < T; ++j) {
          double dot = 0;
          for (size_t d = 0; d < hd; ++d)
            dot += double(q.data()[(b * T + i) * H + h * hd + d]) * k.data()[(b * T + j) * H + h * hd + d];
          s[j] = dot / std::sqrt(double(hd)) + mask.data()[b * T + j];
          mx = std::max(mx, s[j]);
        }
        for (double& e : s) denom += (e = std::exp(e - mx));
        for (size_t d = 0; d < hd; ++d) {
          double acc = 0;
          for (size_t j = 0; j < T; ++j)
            if (attn::dropout_keeps(seed, p, b, h, i, j)) acc += s[j] / denom / (1 - p) * v.data()[(b * T + j) * H + h * hd + d];
          worst = std::max(worst, std::abs(acc - out.data()[(b * T + i) * H + h * hd + d]));
        }
        for (size_t j = 0; j < T; ++j, ++total) dropped += !attn::dropout_keeps(seed, p, b, h, i, j);
      }
  CHECK(worst < 1e-5);
  const double rate = double(dropped) / double(total);  // 19,600 draws: 3 sigma is 0.009
  CHECK(rate == Approx(p).margin(0.01));
  // Another seed drops other weights; eval mode drops none.
  Generator other(8);
  CHECK(max_abs_diff(multi_head_attention(q, k, v, mask, heads, p, true, other), out) > 1e-3);
  CHECK(max_abs_diff(multi_head_attention(q, k, v, mask, heads, p, false),
                     unfused_multi_head_attention(q, k, v, mask, heads, 0.f, false)) < 2e-6 * std::max(1.0, max_abs(out)));
}

TEST_CASE("flash attention: -inf masks and dropout of every weight", "[flash]") {
  const size_t B = 2, T = 40, heads = 2, H = 16;
  const Tensor q = randn({B, T, H}, 71), k = randn({B, T, H}, 72), v = randn({B, T, H}, 73), w = randn({B, T, H}, 74);
  // -inf instead of lowest(): the same weights where a sequence has a key left
  std::vector<float> m(B * T, 0.f);
  for (size_t t = 25; t < T; ++t) m[t] = -INFINITY;
  for (size_t t = 0; t < T; ++t) m[T + t] = -INFINITY;  // sequence 1: no key at all
  const Tensor inf_mask = Tensor::from_vector(m, {B, T});
  const Grads f = run_with_grads(q, k, v, w, [&](const Tensor& a, const Tensor& b, const Tensor& c) {
    return multi_head_attention(a, b, c, inf_mask, heads, 0.f, true);
  });
  const Grads u = run_with_grads(q, k, v, w, [&](const Tensor& a, const Tensor& b, const Tensor& c) {
    return unfused_multi_head_attention(a, b, c, inf_mask, heads, 0.f, false);
  });
  auto first = [&](const Tensor& t) { return slice(t, 0, 0, 1); };
  auto second = [&](const Tensor& t) { return slice(t, 0, 1, 2); };
  CHECK(max_abs_diff(first(f.out), first(u.out)) <= 2e-6 * max_abs(u.out));
  CHECK(max_abs_diff(first(f.dq), first(u.dq)) <= 1e-5 * max_abs(u.dq));
  CHECK(max_abs_diff(first(f.dk), first(u.dk)) <= 1e-5 * max_abs(u.dk));
  CHECK(max_abs_diff(first(f.dv), first(u.dv)) <= 1e-5 * max_abs(u.dv));
  // no key to attend: zero output and zero gradients, both ways (attention_softmax gives a row
  // with no key zero weights, not the NaN of a softmax over -inf)
  for (const Grads* g : {&f, &u}) {
    CHECK(max_abs(second(g->out)) == 0.0);
    CHECK(max_abs(second(g->dq)) + max_abs(second(g->dk)) + max_abs(second(g->dv)) == 0.0);
  }
  // a first key block all -inf, real keys after it: the running max starts at -inf
  const size_t T2 = 100;
  const Tensor q2 = randn({1, T2, H}, 75), k2 = randn({1, T2, H}, 76), v2 = randn({1, T2, H}, 77), w2 = randn({1, T2, H}, 78);
  std::vector<float> left(T2, 0.f);
  for (size_t t = 0; t < 64; ++t) left[t] = -INFINITY;
  const Tensor left_mask = Tensor::from_vector(left, {1, T2});
  const Grads lf = run_with_grads(q2, k2, v2, w2, [&](const Tensor& a, const Tensor& b, const Tensor& c) {
    return multi_head_attention(a, b, c, left_mask, heads, 0.f, true);
  });
  const Grads lu = run_with_grads(q2, k2, v2, w2, [&](const Tensor& a, const Tensor& b, const Tensor& c) {
    return unfused_multi_head_attention(a, b, c, left_mask, heads, 0.f, false);
  });
  CHECK(max_abs_diff(lf.out, lu.out) <= 2e-6 * max_abs(lu.out));
  CHECK(max_abs_diff(lf.dq, lu.dq) <= 1e-5 * max_abs(lu.dq));
  CHECK(max_abs_diff(lf.dk, lu.dk) <= 1e-5 * max_abs(lu.dk));
  CHECK(max_abs_diff(lf.dv, lu.dv) <= 1e-5 * max_abs(lu.dv));
  // p = 1 drops every weight: zero output, zero gradients, and dropout_keeps agrees
  const Grads all = run_with_grads(q, k, v, w, [&](const Tensor& a, const Tensor& b, const Tensor& c) {
    Generator gen(5);
    return multi_head_attention(a, b, c, Tensor(), heads, 1.f, true, gen);
  });
  CHECK(max_abs(all.out) == 0.0);
  CHECK(max_abs(all.dq) + max_abs(all.dk) + max_abs(all.dv) == 0.0);
  size_t kept = 0;
  for (size_t i = 0; i < 64; ++i)
    for (size_t j = 0; j < 64; ++j) kept += attn::dropout_keeps(123, 1.f, 0, 0, i, j);
  CHECK(kept == 0);
}

TEST_CASE("flash attention: bad shapes name the op and the values", "[flash][errors]") {
  const Tensor q = randn({2, 5, 8}, 1), k = randn({2, 5, 8}, 2), v = randn({2, 5, 8}, 3);
  CHECK_THROWS_WITH(multi_head_attention(q, randn({2, 4, 8}, 4), v, Tensor(), 2, 0.f, false),
                    Catch::Contains("[multi_head_attention]") && Catch::Contains("[2, 4, 8]"));
  CHECK_THROWS_WITH(multi_head_attention(q, k, v, Tensor(), 3, 0.f, false),
                    Catch::Contains("width 8 is not a multiple of num_heads 3"));
  CHECK_THROWS_WITH(multi_head_attention(q, k, v, randn({2, 4}, 5), 2, 0.f, false),
                    Catch::Contains("mask has shape [2, 4]"));
  CHECK_THROWS_WITH(multi_head_attention(q, k, v, Tensor(), 2, 1.5f, true), Catch::Contains("1.5"));
  CHECK_THROWS_WITH(multi_head_attention(randn({2, 8}, 6), randn({2, 8}, 6), randn({2, 8}, 6), Tensor(), 2, 0.f, false),
                    Catch::Contains("(B, T, H)"));
  CHECK_THROWS_WITH(unfused_multi_head_attention(q, k, v, randn({2, 4}, 5), 2, 0.f, false),
                    Catch::Contains("[unfused_multi_head_attention] mask has shape [2, 4]"));
  CHECK_THROWS_WITH(unfused_multi_head_attention(q, k, v, Tensor(), 3, 0.f, false),
                    Catch::Contains("[unfused_multi_head_attention] width 8"));
}

TEST_CASE("flash attention: packed sequences equal the padded batch at real positions", "[flash]") {
  const size_t B = 4, T = 70, heads = 2, hd = 20, H = heads * hd;
  const std::vector<size_t> lengths{70, 33, 1, 0};  // full, padded, one token, empty
  const Tensor mask = padding_mask(lengths, T);
  const Tensor q = randn({B, T, H}, 51, 1.5f), k = randn({B, T, H}, 52, 1.5f), v = randn({B, T, H}, 53);
  const Tensor w = randn({B, T, H}, 54);
  std::vector<int64_t> rows;
  std::vector<size_t> cu{0};
  std::vector<float> real(B * T * H, 0.f);
  for (size_t b = 0; b < B; ++b) {
    for (size_t t = 0; t < lengths[b]; ++t) {
      rows.push_back(int64_t(b * T + t));
      for (size_t c = 0; c < H; ++c) real[(b * T + t) * H + c] = 1.f;
    }
    cu.push_back(rows.size());
  }
  const Tensor real_w = mul(w, Tensor::from_vector(real, {B, T, H})).detach();  // the loss reads real positions only
  auto packed = [&](const Tensor& a, const Tensor& b, const Tensor& c) {
    auto pack = [&](const Tensor& x) { return index_select(reshape(x, {long(B * T), long(H)}), 0, rows); };
    const Tensor out = multi_head_attention(pack(a), pack(b), pack(c), cu, heads, 0.f, true);
    nn::PackedBatch pb;
    pb.batch = B;
    pb.seq_len = T;
    pb.rows = rows;
    pb.cu_seqlens = cu;
    return pb.unpack(out);
  };
  const Grads p = run_with_grads(q, k, v, real_w, packed);
  const Grads d = run_with_grads(q, k, v, real_w, [&](const Tensor& a, const Tensor& b, const Tensor& c) {
    return multi_head_attention(a, b, c, mask, heads, 0.f, true);
  });
  CHECK(max_abs_diff(p.out, mul(d.out, Tensor::from_vector(real, {B, T, H}))) <= 2e-6 * max_abs(d.out));
  CHECK(max_abs_diff(p.dq, d.dq) <= 1e-5 * max_abs(d.dq));
  CHECK(max_abs_diff(p.dk, d.dk) <= 1e-5 * max_abs(d.dk));
  CHECK(max_abs_diff(p.dv, d.dv) <= 1e-5 * max_abs(d.dv));
  // finite differences through the packed op, dropout included
  test::GradCheckOptions opt;
  opt.max_checks = 24;
  const std::vector<size_t> cu_small{0, 5, 5, 72};
  test::check_gradients(
      [&](const std::vector<Tensor>& x) {
        Generator gen(3);
        return multi_head_attention(x[0], x[1], x[2], cu_small, 2, 0.2f, true, gen);
      },
      {randn({72, 8}, 61), randn({72, 8}, 62), randn({72, 8}, 63)}, opt);
  CHECK_THROWS_WITH(multi_head_attention(randn({6, 8}, 1), randn({6, 8}, 2), randn({6, 8}, 3), std::vector<size_t>{0, 4, 5},
                                         2, 0.f, false),
                    Catch::Contains("cu_seqlens must run from 0 to the 6 rows"));
  CHECK_THROWS_WITH(multi_head_attention(randn({6, 8}, 1), randn({6, 8}, 2), randn({6, 8}, 3), std::vector<size_t>{0, 4, 2, 6},
                                         2, 0.f, false),
                    Catch::Contains("cu_seqlens decreases at entry 2"));
}

namespace {

// Parameter gradients and outputs at real positions of `run(model)` under sum(w * y) over real
// positions, for a fresh copy of a model built by `make`, with or without packing.
// Flash attention and padding-free: on (packed rows) or off (the unfused, padded composition).
nn::ExecutionOptions packed_rows(bool on) {
  nn::ExecutionOptions e;
  e.flash_attention = on;
  e.padding_free = on;
  return e;
}

template <class Make, class Run>
std::vector<Tensor> train_grads(Make make, Run run, const Tensor& real, bool packed_path, bool checkpointing = false) {
  auto model = make();
  model->set_execution(packed_rows(packed_path));
  model->train();
  default_generator().set_state(Generator(17).state());  // the same dropout draws for every run
  Tensor y = run(*model, checkpointing);
  sum(mul(mul(y, y), real)).backward();
  std::vector<Tensor> g;
  for (auto& [name, t] : model->named_parameters()) g.push_back(t.grad().detach().clone());
  g.push_back(mul(y, real).detach());
  return g;
}

void check_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tol) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(max_abs_diff(a[i], b[i]) <= tol * std::max(1.0, max_abs(b[i])));
  }
}

}  // namespace

TEST_CASE("packed training: BERT's and ALBERT's encoders train the same without their padding", "[flash]") {
  nn::TransformerOptions opt;
  opt.hidden_size = 32;
  opt.num_heads = 4;
  opt.intermediate_size = 64;
  opt.hidden_dropout = 0.f;
  opt.attention_dropout = 0.f;
  const size_t B = 3, T = 70;
  const std::vector<size_t> lengths{70, 33, 2};
  const Tensor x = randn({B, T, 32}, 41);
  const Tensor mask = padding_mask(lengths, T);
  std::vector<float> real01(B * T * 32, 0.f);
  for (size_t b = 0; b < B; ++b)
    for (size_t t = 0; t < lengths[b] * 32; ++t) real01[b * T * 32 + t] = 1.f;
  const Tensor real = Tensor::from_vector(real01, {B, T, 32});
  auto make_bert = [&] {
    auto enc = std::make_shared<nn::Encoder>(opt, 2);
    Generator init(5);
    for (Tensor p : enc->parameters()) nn::init::normal_(p, 0.f, 0.2f, init);
    return enc;
  };
  auto run_bert = [&](nn::Encoder& enc, bool ckpt) {
    enc.checkpoint_activations = ckpt;
    return enc.forward(x, mask);
  };
  // packed (multi_head_attention over packed rows) against padded and unfused
  check_same(train_grads(make_bert, run_bert, real, true), train_grads(make_bert, run_bert, real, false), 1e-4);
  {
    CHECK_FALSE(nn::use_packed_rows(nn::ExecutionOptions{}, mask));  // padding-free is opt-in
    nn::ExecutionOptions e = packed_rows(true);
    CHECK(nn::use_packed_rows(e, mask));
    CHECK_FALSE(nn::use_packed_rows(e, padding_mask({70, 70, 70}, T)));  // nothing to drop
    e.flash_attention = false;
    CHECK_FALSE(nn::use_packed_rows(e, mask));  // packing needs multi_head_attention
  }
  // the packed path zeroes padded positions
  {
    auto enc = make_bert();
    enc->set_execution(packed_rows(true));
    enc->train();
    const Tensor y = enc->forward(x, mask).contiguous();
    double padded = 0;
    for (size_t i = 0; i < y.numel(); ++i) padded = std::max(padded, double(std::abs(y.data()[i])) * (1 - real01[i]));
    CHECK(padded == 0.0);
  }
  // with dropout, checkpointing recomputes the same packed layers (the masks repeat)
  opt.hidden_dropout = 0.1f;
  opt.attention_dropout = 0.1f;
  check_same(train_grads(make_bert, run_bert, real, true, true), train_grads(make_bert, run_bert, real, true, false), 1e-5);

  // ALBERT: two layers sharing one group
  models::AlbertConfig ac;
  ac.embedding_size = 16;
  ac.hidden_size = 32;
  ac.num_attention_heads = 4;
  ac.intermediate_size = 64;
  ac.num_hidden_layers = 2;
  ac.hidden_dropout_prob = 0.f;
  ac.attention_probs_dropout_prob = 0.f;
  const Tensor e = randn({B, T, 16}, 42);
  auto make_albert = [&] {
    auto t = std::make_shared<models::AlbertTransformer>(ac);
    Generator init(6);
    for (Tensor p : t->parameters()) nn::init::normal_(p, 0.f, 0.2f, init);
    return t;
  };
  auto run_albert = [&](models::AlbertTransformer& t, bool ckpt) {
    t.checkpoint_activations = ckpt;
    return t.forward(e, mask);
  };
  check_same(train_grads(make_albert, run_albert, real, true), train_grads(make_albert, run_albert, real, false), 1e-4);
}

TEST_CASE("padding-free question answering: a padded batch's loss is its examples' own", "[flash]") {
  models::BertConfig c;
  c.vocab_size = 30, c.hidden_size = 16, c.num_attention_heads = 2, c.num_hidden_layers = 2, c.intermediate_size = 32;
  c.hidden_dropout_prob = 0.f, c.attention_probs_dropout_prob = 0.f;
  models::BertForQuestionAnswering m(c);
  Generator init(3);
  for (Tensor p : m.parameters()) nn::init::normal_(p, 0.f, 0.2f, init);
  m.eval();
  auto spans = [](std::vector<int64_t> start, std::vector<int64_t> end) {
    return models::Labels{{"start_positions", test::ints(start)}, {"end_positions", test::ints(end)}};
  };
  // the second example padded from 4 to 6 tokens
  const models::ModelInputs both =
      models::make_inputs(2, 6, {2, 5, 7, 9, 11, 3, 2, 6, 8, 3, 0, 0}, {}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0});
  const auto loss = [&](const models::ModelInputs& in, const models::Labels& l) {
    return m.forward_named(in, l).at("loss").item();
  };
  m.set_execution(packed_rows(true));
  REQUIRE(nn::use_packed_rows(m.execution(), nn::additive_attention_mask(both.attention_mask)));
  const float alone = (loss(models::make_inputs(1, 6, {2, 5, 7, 9, 11, 3}), spans({1}, {3})) +
                       loss(models::make_inputs(1, 4, {2, 6, 8, 3}), spans({2}, {2}))) / 2;
  CHECK(loss(both, spans({1, 2}, {3, 2})) == Approx(alone).epsilon(1e-5));
  const Tensor start = m.forward_named(both, {}).at("start_logits").contiguous();
  CHECK(start.data()[11] == -1e4f);  // no span starts in the padding
  // transformers' way (the default): the padded positions' logits enter the second example's softmax
  m.set_execution(nn::ExecutionOptions{});
  CHECK(loss(both, spans({1, 2}, {3, 2})) != Approx(alone).epsilon(1e-5));
}
