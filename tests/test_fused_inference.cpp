// The inference path (nn/fused_encoder.hpp): the blocked online-softmax attention kernel against
// a plain double-precision one, and the packed, fused encoder against the recorded forward it
// replaces (post-LN and pre-LN, every activation, padding, empty sequences, bf16).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/kernels/attention.hpp"
#include "autograd/ops.hpp"
#include "autograd/precision.hpp"
#include "models/bert/bert.hpp"
#include "nn/fused_encoder.hpp"
#include "nn/packed_weights.hpp"
#include "nn/init.hpp"
#include "util/random.hpp"

using namespace xg;

namespace {

std::vector<float> normal_vec(size_t n, Generator& g, float std = 1.f) {
  std::vector<float> v(n);
  for (auto& x : v) x = g.normal() * std;
  return v;
}

nn::ExecutionOptions fused_inference(bool on) {
  nn::ExecutionOptions e;
  e.fused_inference = on;
  return e;
}

Tensor run_encoder(nn::Encoder& enc, const Tensor& x, const Tensor& mask, bool fused) {
  enc.set_execution(fused_inference(fused));
  NoGradGuard no_grad;
  return enc.forward(x, mask).contiguous();
}

// Max |a - b| over the positions the 0/1 mask (B, T) attends; checks padded rows of `fused` are 0.
float max_diff_attended(const Tensor& fused, const Tensor& recorded, const std::vector<float>& mask01) {
  const size_t H = fused.size(2);
  float worst = 0;
  for (size_t p = 0; p < mask01.size(); ++p)
    for (size_t h = 0; h < H; ++h) {
      const float a = fused.data()[p * H + h], b = recorded.data()[p * H + h];
      if (mask01[p] != 0.f) worst = std::max(worst, std::fabs(a - b));
      else if (a != 0.f) return INFINITY;
    }
  return worst;
}

}  // namespace

TEST_CASE("blocked online-softmax attention equals plain attention over packed sequences", "[fused]") {
  Generator g(7);
  // head dims: whole SIMD vectors (AVX-512: 16 floats; AVX2: 8), 3 vectors, and ragged tails
  for (size_t hd : {64, 32, 48, 24, 20, 8, 80}) {
    for (bool with_bias : {false, true}) {
      // sharp: scores of +-hundreds, so the running max moves between key blocks and exp underflows
      for (float spread : {1.f, 8.f}) {
        const size_t heads = hd == 80 ? 1 : 3, H = heads * hd, ld = 3 * H + 5;  // slices of a wider buffer
        const size_t ld_out = H + 3;                                            // and a wider output
        // an empty sequence too; 40 keys end on a 3-vector block with AVX-512 (the others on 1, 2 or 4)
        const std::vector<size_t> cu{0, 1, 4, 21, 85, 150, 150, 280, 320};
        const size_t rows = cu.back();
        const std::vector<float> buf = normal_vec(rows * ld, g, spread), bias = normal_vec(3 * H, g, 0.5f);
        const attn::PackedQKV qkv{buf.data(), buf.data() + H, buf.data() + 2 * H, ld,
                                  with_bias ? bias.data() : nullptr, with_bias ? bias.data() + H : nullptr,
                                  with_bias ? bias.data() + 2 * H : nullptr};
        const float scale = 1.f / std::sqrt(float(hd));
        std::vector<float> fast(rows * ld_out, -7.f), ref(rows * ld_out, -7.f);
        attn::packed_self_attention(qkv, fast.data(), ld_out, cu.data(), cu.size() - 1, heads, hd, scale);
        attn::packed_self_attention_reference(qkv, ref.data(), ld_out, cu.data(), cu.size() - 1, heads, hd, scale);
        float worst = 0;
        for (size_t i = 0; i < fast.size(); ++i) worst = std::max(worst, std::fabs(fast[i] - ref[i]) / spread);
        INFO("head_dim " << hd << " bias " << with_bias << " spread " << spread);
        // fp32 scores of size s carry s * 6e-8 of rounding into the weights: ~3e-5 at spread 8
        CHECK(worst < (spread == 1.f ? 2e-5f : 3e-4f));
        CHECK(fast[H] == -7.f);  // the output's gap between rows is not written
      }
    }
  }
}

TEST_CASE("attention at some query rows: those rows of full attention, bit for bit; rows outside refused", "[fused]") {
  Generator g(17);
  for (size_t hd : {64, 20}) {
    const size_t heads = 2, H = heads * hd, ld = 3 * H;
    const std::vector<size_t> cu{0, 3, 3, 133, 140};  // an empty sequence, and one longer than a query block
    const std::vector<float> buf = normal_vec(cu.back() * ld, g), bias = normal_vec(3 * H, g, 0.5f);
    const attn::PackedQKV qkv{buf.data(), buf.data() + H, buf.data() + 2 * H, ld, bias.data(), bias.data() + H,
                              bias.data() + 2 * H};
    const float scale = 1.f / std::sqrt(float(hd));
    std::vector<float> full(cu.back() * H);
    attn::packed_self_attention(qkv, full.data(), H, cu.data(), cu.size() - 1, heads, hd, scale);
    // any order, repeats, a first and a last row; 70 queries in sequence 2 (more than one block)
    std::vector<size_t> rows{2, 0, 2}, begin{0, 3, 3};
    for (size_t i = 0; i < 70; ++i) rows.push_back(3 + (i * 37) % 130);
    begin.push_back(rows.size());
    rows.push_back(139);
    begin.push_back(rows.size());
    const attn::QueryRows queries{rows.data(), begin.data()};
    std::vector<float> some(rows.size() * H, -7.f);
    attn::AttentionWorkspace ws;
    attn::packed_self_attention(qkv, some.data(), H, cu.data(), cu.size() - 1, heads, hd, scale, ws, &queries);
    INFO("head_dim " << hd);
    for (size_t i = 0; i < rows.size(); ++i)
      for (size_t c = 0; c < H; ++c) REQUIRE(some[i * H + c] == full[rows[i] * H + c]);
    rows[1] = 3;  // sequence 0 is rows [0, 3)
    CHECK_THROWS_WITH(attn::packed_self_attention(qkv, some.data(), H, cu.data(), cu.size() - 1, heads, hd, scale, ws, &queries),
                      Catch::Contains("query 1 of sequence 0 is row 3, outside the sequence's rows [0, 3)"));
  }
}

TEST_CASE("attention of a one-token sequence returns its value; large scores stay finite", "[fused]") {
  const size_t hd = 16, H = hd;
  std::vector<float> q(H, 300.f), k(H, 300.f), v(H);
  for (size_t d = 0; d < hd; ++d) v[d] = float(d);
  const size_t cu[] = {0, 1};
  std::vector<float> out(H);
  attn::packed_self_attention({q.data(), k.data(), v.data(), H, nullptr, nullptr, nullptr}, out.data(), H, cu, 1, 1, hd,
                              1.f);
  for (size_t d = 0; d < hd; ++d) CHECK(out[d] == Approx(v[d]));
}

TEST_CASE("the fused encoder equals the recorded forward at real tokens and is zero at padding", "[fused]") {
  struct Case { bool pre_ln; nn::Activation act; };
  for (const Case c : {Case{false, nn::Activation::Gelu}, Case{false, nn::Activation::GeluTanh},
                       Case{true, nn::Activation::Relu}, Case{true, nn::Activation::Tanh}}) {
    nn::TransformerOptions opt;
    opt.hidden_size = 48;
    opt.num_heads = 3;  // head_dim 16
    opt.intermediate_size = 80;
    opt.pre_layer_norm = c.pre_ln;
    opt.activation = c.act;
    nn::Encoder enc(opt, 2);
    Generator g(11);
    for (Tensor p : enc.parameters()) nn::init::normal_(p, 0.f, 0.3f, g);  // peaked attention, not uniform
    enc.eval();
    const size_t B = 4, T = 70;
    const std::vector<size_t> lengths{70, 33, 1, 0};  // a full row, padding, one token, all padding
    std::vector<float> mask01(B * T, 0.f);
    for (size_t b = 0; b < B; ++b)
      for (size_t t = 0; t < lengths[b]; ++t) mask01[b * T + t] = 1.f;
    const Tensor mask = nn::additive_attention_mask(Tensor::from_vector(mask01, {B, T}));
    const Tensor x = Tensor::from_vector(normal_vec(B * T * opt.hidden_size, g), {B, T, opt.hidden_size});
    const Tensor fused = run_encoder(enc, x, mask, true), recorded = run_encoder(enc, x, mask, false);
    INFO("pre_ln " << c.pre_ln << " activation " << nn::activation_name(c.act));
    CHECK(max_diff_attended(fused, recorded, mask01) < 1e-4f);
    // without a mask every position is real
    const Tensor f2 = run_encoder(enc, x, Tensor(), true), r2 = run_encoder(enc, x, Tensor(), false);
    CHECK(max_diff_attended(f2, r2, std::vector<float>(B * T, 1.f)) < 1e-4f);
  }
}

TEST_CASE("padding masks: 0 attends, -1e4 or lower ignores; an all-padding batch is zeros", "[fused]") {
  const float lowest = std::numeric_limits<float>::lowest();
  CHECK(nn::is_padding_mask(Tensor()));
  CHECK(nn::is_padding_mask(Tensor::from_vector({0, -1e4f, -INFINITY, lowest}, {1, 4})));
  CHECK_FALSE(nn::is_padding_mask(Tensor::from_vector({0, -9999.f}, {1, 2})));
  CHECK_FALSE(nn::is_padding_mask(Tensor::from_vector({0, 0.5f}, {1, 2})));
  CHECK_FALSE(nn::is_padding_mask(Tensor::from_vector({0, 0}, {2})));  // not (B, T)
  nn::TransformerOptions opt;
  opt.hidden_size = 16;
  opt.num_heads = 2;
  opt.intermediate_size = 32;
  nn::Encoder enc(opt, 2);
  enc.eval();
  NoGradGuard no_grad;
  const Tensor all_padding = Tensor::full({2, 3}, lowest);
  const Tensor out = nn::fused_encoder_forward(enc, Tensor::ones({2, 3, 16}), all_padding);
  CHECK(out.shape() == Shape{2, 3, 16});
  for (float v : out.to_vector()) CHECK(v == 0.f);
}

TEST_CASE("Encoder::forward takes the fused path only for inference under a padding mask", "[fused]") {
  nn::TransformerOptions opt;
  opt.hidden_size = 32;
  opt.num_heads = 2;
  opt.intermediate_size = 64;
  nn::Encoder enc(opt, 1);
  Generator g(3);
  for (Tensor p : enc.parameters()) nn::init::normal_(p, 0.f, 0.2f, g);
  const Tensor x = Tensor::from_vector(normal_vec(2 * 5 * 32, g), {2, 5, 32});
  const Tensor pad = nn::additive_attention_mask(Tensor::from_vector({1, 1, 1, 1, 1, 1, 1, 0, 0, 0}, {2, 5}));
  auto padded_row = [&](const Tensor& out) { return out.contiguous().data()[(5 + 4) * 32]; };
  enc.set_execution(fused_inference(true));
  enc.eval();
  {
    NoGradGuard no_grad;
    CHECK(padded_row(enc.forward(x, pad)) == 0.f);  // fused: padded rows are zero
    // a soft (non-padding) mask keeps the recorded path, which computes padded rows too
    const Tensor soft = Tensor::from_vector({0, -1, 0, 0, 0, 0, 0, -2, 0, 0}, {2, 5});
    CHECK_FALSE(nn::is_padding_mask(soft));
    CHECK(padded_row(enc.forward(x, soft)) != 0.f);
  }
  CHECK(padded_row(enc.forward(x, pad)) != 0.f);  // gradients on: recorded
  enc.train();
  {
    NoGradGuard no_grad;
    CHECK(padded_row(enc.forward(x, pad)) != 0.f);  // training mode (dropout): recorded
  }
  enc.eval();
  NoGradGuard no_grad;
  CHECK_THROWS_WITH(nn::fused_encoder_forward(enc, Tensor::zeros({2, 5, 31}), Tensor()),
                    Catch::Contains("(B, T, 32)") && Catch::Contains("[2, 5, 31]"));
  CHECK_THROWS_WITH(nn::fused_encoder_forward(enc, x, Tensor::zeros({2, 4})), Catch::Contains("mask"));
}

TEST_CASE("BERT's fused inference equals its recorded forward, in fp32 and within bf16's bound", "[fused][bf16]") {
  models::BertConfig c = models::BertConfig::preset("tiny");
  models::BertModel model(c);
  Generator g(5);
  model.init_weights(g);
  model.eval();
  models::ModelInputs in;
  const size_t B = 3, T = 40;
  std::vector<int64_t> ids(B * T);
  std::vector<float> mask01(B * T, 0.f);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t(g.below(c.vocab_size));
  for (size_t b = 0; b < B; ++b)
    for (size_t t = 0; t < T - 13 * b; ++t) mask01[b * T + t] = 1.f;
  in.input_ids = Tensor::from_ints(ids, {B, T});
  in.attention_mask = Tensor::from_vector(mask01, {B, T});
  auto hidden = [&](bool fused) {
    model.set_execution(fused_inference(fused));
    NoGradGuard no_grad;
    return model.forward(in).last_hidden_state.contiguous();
  };
  const Tensor recorded = hidden(false), fused = hidden(true);
  CHECK(max_diff_attended(fused, recorded, mask01) < 1e-4f);
  // A sentence classifier's forward (the last layer at the first tokens only) gives the fused
  // output's first rows: plain, and below through packed weights at either precision.
  auto first_tokens_match = [&] {
    model.set_execution(fused_inference(true));
    NoGradGuard no_grad;
    const Tensor all = nn::OutputRows::first_tokens(B, T).select(model.forward(in).last_hidden_state).contiguous();
    const Tensor some = model.forward_first_tokens(in).last_hidden_state.contiguous();
    float worst = 0.f;
    for (size_t i = 0; i < all.numel(); ++i) worst = std::max(worst, std::fabs(all.data()[i] - some.data()[i]));
    INFO("max difference " << worst << ", rows run " << nn::last_fused_output_rows());
    return worst < 1e-6f && nn::last_fused_output_rows() == B;
  };
  CHECK(first_tokens_match());
  Tensor low, low_recorded;
  {
    MatmulPrecisionGuard bf16(MatmulPrecision::BF16);
    low = hidden(true);
    low_recorded = hidden(false);
  }
  // bf16 GEMM inputs (8-bit mantissa) through two layers of LayerNormed activations of unit size
  const float bf16_diff = max_diff_attended(low, recorded, mask01);
  CHECK(bf16_diff > 0.f);
  CHECK(bf16_diff < 0.1f);
  nn::Linear& up0 = *model.encoder->layer->operator[](0).intermediate->dense;
  nn::SelfAttention& self0 = *model.encoder->layer->operator[](0).attention->self;
  // weights packed (and rounded) once give what packing them on every GEMM gives, on the fused
  // path and through Linear::forward (the recorded path); dropping them restores fp32
  {
    MatmulPrecisionGuard bf16(MatmulPrecision::BF16);
    nn::InferenceWeights packed(model, MatmulPrecision::BF16);
    CHECK(up0.packed_weight != nullptr);
    CHECK(nn::packed_weight_for(up0) != nullptr);
    CHECK(nn::packed_qkv_for(self0) != nullptr);
    CHECK(max_diff_attended(hidden(true), low, mask01) < 1e-6f);
    CHECK(first_tokens_match());
    {  // the recorded path reads it too (every row: the recorded path computes the padded ones)
      const Tensor packed_recorded = hidden(false);
      float worst = 0.f;
      for (size_t i = 0; i < packed_recorded.numel(); ++i)
        worst = std::max(worst, std::fabs(packed_recorded.data()[i] - low_recorded.data()[i]));
      CHECK(worst < 1e-6f);
    }
    MatmulPrecisionGuard fp32(MatmulPrecision::FP32);
    CHECK(nn::packed_weight_for(up0) == nullptr);  // packed for bf16: not read at fp32
    CHECK(nn::packed_qkv_for(self0) == nullptr);
    CHECK(max_diff_attended(hidden(true), fused, mask01) == 0.f);
  }
  CHECK(up0.packed_weight == nullptr);
  CHECK(self0.packed_qkv == nullptr);
  CHECK(max_diff_attended(hidden(true), fused, mask01) == 0.f);
  {  // a query packed alone by one InferenceWeights is not packed again with its key and value
    nn::InferenceWeights query_alone(*self0.query, MatmulPrecision::FP32);
    CHECK_THROWS_WITH(nn::InferenceWeights(model, MatmulPrecision::FP32), Catch::Contains("already packed"));
    CHECK(self0.packed_qkv == nullptr);  // the failed one left nothing behind
    CHECK(self0.query->packed_weight != nullptr);
  }
  {  // and the other way round: the model first, then its query alone
    nn::InferenceWeights whole(model, MatmulPrecision::FP32);
    CHECK_THROWS_WITH(nn::InferenceWeights(*self0.query, MatmulPrecision::FP32), Catch::Contains("already packed"));
    CHECK(nn::packed_qkv_for(self0) != nullptr);
    CHECK(nn::packed_weight_for(*self0.query) == nullptr);  // held jointly, no packing of its own
  }
  CHECK(self0.query->packed_weight == nullptr);
  {
    nn::InferenceWeights packed(model, MatmulPrecision::FP32);
    // Q, K and V as one GEMM on their joint packing, not packed one by one; the same bits as
    // three GEMMs (checked below against the unpacked fused run)
    CHECK(nn::packed_qkv_for(self0) != nullptr);
    CHECK(nn::packed_weight_for(*self0.query) == nullptr);
    CHECK(nn::packed_weight_for(*self0.value) == nullptr);
    CHECK_THROWS_WITH(nn::InferenceWeights(model, MatmulPrecision::FP32), Catch::Contains("already packed"));
    CHECK(up0.packed_weight != nullptr);  // the failed second one left the first one's packing
    CHECK(max_diff_attended(hidden(true), fused, mask01) == 0.f);
    CHECK(first_tokens_match());
    auto same = [](const Tensor& a, const Tensor& b) {  // every row, padded ones included
      for (size_t i = 0; i < a.numel(); ++i)
        if (a.data()[i] != b.data()[i]) return false;
      return true;
    };
    CHECK(same(hidden(false), recorded));  // Linear::forward through the packing
    // both paths read the packing, not the weight: a raw write through data() goes unseen while it lives
    const std::vector<float> saved(up0.weight.data(), up0.weight.data() + up0.weight.numel());
    std::fill_n(up0.weight.data(), up0.weight.numel(), 0.f);
    CHECK(max_diff_attended(hidden(true), fused, mask01) == 0.f);
    CHECK(same(hidden(false), recorded));
    std::copy(saved.begin(), saved.end(), up0.weight.data());
  }
  // a weight replaced while the packing lives is read itself, not through its stale packing
  for (MatmulPrecision precision : {MatmulPrecision::BF16, MatmulPrecision::FP32}) {
    MatmulPrecisionGuard guard(precision);
    const Tensor before = hidden(true);
    nn::InferenceWeights packed(model, precision);
    nn::Linear& up = *model.encoder->layer->operator[](1).intermediate->dense;
    const Tensor original = up.weight;
    up.weight = Tensor::zeros(original.shape());
    CHECK(nn::packed_weight_for(up) == nullptr);
    const Tensor replaced = hidden(true);
    up.weight = original;
    CHECK(max_diff_attended(replaced, before, mask01) > 1e-3f);  // the zero weight was used
    nn::Linear& key = *model.encoder->layer->operator[](1).attention->self->key;  // and one of Q, K, V
    const Tensor original_key = key.weight;
    key.weight = Tensor::zeros(original_key.shape());
    CHECK(nn::packed_qkv_for(*model.encoder->layer->operator[](1).attention->self) == nullptr);
    const Tensor key_replaced = hidden(true);
    key.weight = original_key;
    CHECK(max_diff_attended(key_replaced, before, mask01) > 1e-3f);
    // a weight changed in place through copy_ (its version counts it) is read as it is now, too
    const Tensor kept = up.weight.clone();
    up.weight.copy_(Tensor::zeros(kept.shape()));
    CHECK(nn::packed_weight_for(up) == nullptr);
    CHECK(max_diff_attended(hidden(true), replaced, mask01) == 0.f);
    up.weight.copy_(kept);
    const Tensor kept_key = key.weight.clone();
    key.weight.copy_(Tensor::zeros(kept_key.shape()));
    CHECK(nn::packed_qkv_for(*model.encoder->layer->operator[](1).attention->self) == nullptr);
    CHECK(max_diff_attended(hidden(true), key_replaced, mask01) == 0.f);
    key.weight.copy_(kept_key);
  }
}

TEST_CASE("linear through a packed weight: any leading shape, with or without bias, checked inputs", "[fused]") {
  nn::Linear with_bias(6, 5), no_bias(6, 5, false);
  Generator g(3);
  const Tensor x1 = Tensor::normal({6}, 0.f, 1.f, g), x3 = Tensor::normal({2, 3, 6}, 0.f, 1.f, g);
  NoGradGuard no_grad;
  for (nn::Linear* lin : {&with_bias, &no_bias})
    for (const Tensor& x : {x1, x3}) {
      const Tensor expected = lin->forward(x).contiguous();
      nn::InferenceWeights packed(*lin, MatmulPrecision::FP32);
      REQUIRE(nn::packed_weight_for(*lin) != nullptr);
      const Tensor got = lin->forward(x).contiguous();
      REQUIRE(got.shape() == expected.shape());
      for (size_t i = 0; i < got.numel(); ++i) CHECK(got.data()[i] == Approx(expected.data()[i]).margin(1e-6));
    }
  nn::InferenceWeights packed(with_bias, MatmulPrecision::FP32);
  const auto w = nn::packed_weight_for(with_bias);
  CHECK_THROWS_WITH(linear(Tensor::zeros({2, 5}), *w, Tensor()),
                    Catch::Contains("[linear] input [2, 5] does not match weight [5, 6] (packed)"));
  CHECK_THROWS_WITH(linear(x3, *w, Tensor::zeros({4})), Catch::Contains("bias [4] does not match weight [5, 6]"));
  CHECK_THROWS_WITH(linear(Tensor::empty({2, 6}, Dtype::Int64), *w, Tensor()), Catch::Contains("[linear]"));
  {  // it records nothing, so an input that needs a gradient is refused while gradients are on
    EnableGradGuard grad_on;
    const Tensor needs_grad = Tensor::zeros({2, 6}, /*requires_grad=*/true);
    CHECK_THROWS_WITH(linear(needs_grad, *w, Tensor()), Catch::Contains("forward passes only"));
    CHECK_NOTHROW(linear(Tensor::zeros({2, 6}), *w, Tensor()));
  }
}
