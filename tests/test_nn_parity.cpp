// Every nn layer against PyTorch 1.13: forward output, input and parameter gradients
// (tests/data/nn_goldens.safetensors from tools/gen_nn_goldens.py). Errors are relative to each
// tensor's largest magnitude; the maxima are printed for the record.
#include <catch2/catch.hpp>
#include <cstdio>

#include "nn/nn.hpp"
#include "tests/golden.hpp"

using namespace xg;
using namespace xg::nn;
using xg::test::max_scaled_error;

namespace {

const Tensor& golden(const std::string& name) { return xg::test::nn_golden(name); }

// Loads the module's parameters from "<case>.<param name>".
void load_case(Module& m, const std::string& c) {
  StateDict sd;
  for (auto& [n, _] : m.named_parameters()) sd[n] = golden(c + "." + n);
  m.load_state_dict(sd);
}

// Checks output and gradients for `c`; `inputs` maps input names to tensors that required grad.
void check_case(Module& m, const std::string& c, const Tensor& y, const std::map<std::string, Tensor>& inputs,
                double tol = 1e-5) {
  y.backward(golden(c + ".in.grad_out"));
  double worst_grad = 0;
  const double out_err = max_scaled_error(y, golden(c + ".out"));
  CHECK(out_err < tol);
  for (auto& [n, p] : m.named_parameters()) {
    INFO(c << " grad of " << n);
    REQUIRE(p.grad().defined());
    const double e = max_scaled_error(p.grad(), golden(c + ".grad." + n));
    CHECK(e < tol * 10);
    worst_grad = std::max(worst_grad, e);
  }
  for (auto& [n, x] : inputs) {
    INFO(c << " grad of input " << n);
    const double e = max_scaled_error(x.grad(), golden(c + ".grad.in." + n));
    CHECK(e < tol * 10);
    worst_grad = std::max(worst_grad, e);
  }
  std::printf("parity %-24s output %.2e  gradients %.2e\n", c.c_str(), out_err, worst_grad);
}

Tensor input(const std::string& name) {
  Tensor t = golden(name).clone();
  t.requires_grad_(true);
  return t;
}

std::vector<int64_t> ids_of(const Tensor& t) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < t.numel(); ++i) ids.push_back(int64_t(t.data()[i]));
  return ids;
}

TransformerOptions small_options(bool pre_ln = false) {
  TransformerOptions o;
  o.hidden_size = 8;
  o.num_heads = 2;
  o.intermediate_size = 16;
  o.hidden_dropout = o.attention_dropout = 0.f;
  o.pre_layer_norm = pre_ln;
  return o;
}

}  // namespace

TEST_CASE("parity: Linear", "[parity][nn]") {
  Linear lin(5, 7);
  load_case(lin, "linear");
  Tensor x = input("linear.in.x");
  check_case(lin, "linear", lin.forward(x), {{"x", x}});
}

TEST_CASE("parity: Embedding with padding_idx", "[parity][nn]") {
  Embedding emb(10, 6, /*padding_idx=*/0);
  load_case(emb, "embedding");
  const Tensor ids = golden("embedding.in.ids");
  check_case(emb, "embedding", emb.forward(ids_of(ids), ids.shape()), {});
}

TEST_CASE("parity: LayerNorm", "[parity][nn]") {
  LayerNorm ln(6, 1e-12f);
  load_case(ln, "layer_norm");
  Tensor x = input("layer_norm.in.x");
  check_case(ln, "layer_norm", ln.forward(x), {{"x", x}});
}

TEST_CASE("parity: activations", "[parity][nn]") {
  for (auto [name, act] : {std::pair{"gelu", Activation::Gelu}, {"gelu_tanh", Activation::GeluTanh},
                           {"relu", Activation::Relu}, {"tanh", Activation::Tanh}}) {
    ActivationLayer layer(act);
    const std::string c = std::string("act_") + name;
    Tensor x = input(c + ".in.x");
    check_case(layer, c, layer.forward(x), {{"x", x}});
  }
}

TEST_CASE("parity: multi-head self-attention with padding", "[parity][nn]") {
  SelfAttention att(small_options());
  load_case(att, "attention");
  att.eval();
  Tensor x = input("attention.in.x");
  check_case(att, "attention", att.forward(x, additive_attention_mask(golden("mask"))), {{"x", x}});
}

TEST_CASE("parity: encoder layer, post-LN (BERT) and pre-LN", "[parity][nn]") {
  for (auto [c, pre] : {std::pair{"encoder_layer_post_ln", false}, {"encoder_layer_pre_ln", true}}) {
    EncoderLayer layer(small_options(pre));
    load_case(layer, c);
    layer.eval();
    Tensor x = input(std::string(c) + ".in.x");
    check_case(layer, c, layer.forward(x, additive_attention_mask(golden("mask"))), {{"x", x}});
  }
}

TEST_CASE("parity: two-layer encoder stack", "[parity][nn]") {
  Encoder enc(small_options(), 2);
  load_case(enc, "encoder");
  enc.eval();
  Tensor x = input("encoder.in.x");
  check_case(enc, "encoder", enc.forward(x, additive_attention_mask(golden("mask"))), {{"x", x}});
}
