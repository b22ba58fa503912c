// Module registry: names and order, train/eval, state_dict round trips and load reports.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "nn/fused_encoder.hpp"
#include "nn/nn.hpp"
#include "tests/temp_path.hpp"

using namespace xg;
using namespace xg::nn;
using Catch::Matchers::Contains;

namespace {
TransformerOptions tiny() {
  TransformerOptions o;
  o.hidden_size = 8;
  o.num_heads = 2;
  o.intermediate_size = 16;
  return o;
}
}  // namespace

TEST_CASE("named_parameters: Hugging Face names in registration order", "[nn][module]") {
  Encoder enc(tiny(), 2);
  const auto named = enc.named_parameters();
  std::vector<std::string> names;
  for (auto& [n, _] : named) names.push_back(n);
  const std::vector<std::string> first_layer = {
      "layer.0.attention.self.query.weight",   "layer.0.attention.self.query.bias",
      "layer.0.attention.self.key.weight",     "layer.0.attention.self.key.bias",
      "layer.0.attention.self.value.weight",   "layer.0.attention.self.value.bias",
      "layer.0.attention.output.dense.weight", "layer.0.attention.output.dense.bias",
      "layer.0.attention.output.LayerNorm.weight", "layer.0.attention.output.LayerNorm.bias",
      "layer.0.intermediate.dense.weight",     "layer.0.intermediate.dense.bias",
      "layer.0.output.dense.weight",           "layer.0.output.dense.bias",
      "layer.0.output.LayerNorm.weight",       "layer.0.output.LayerNorm.bias"};
  REQUIRE(names.size() == 32);
  CHECK(std::vector<std::string>(names.begin(), names.begin() + 16) == first_layer);
  CHECK(names[16] == "layer.1.attention.self.query.weight");
  // 4 * (8*8 + 8) + 2 * 8 + (8*16 + 16) + (16*8 + 8) + 2 * 8 per layer
  CHECK(enc.num_parameters() == 2 * (4 * 72 + 16 + 144 + 136 + 16));
  CHECK(enc.parameters().size() == 32);
}

TEST_CASE("train/eval propagate, dropout follows the mode", "[nn][module]") {
  Sequential seq({std::make_shared<Linear>(4, 4), GELU(), std::make_shared<Dropout>(0.5f)});
  CHECK(seq.is_training());
  seq.eval();
  for (auto& [_, child] : seq.named_children()) CHECK_FALSE(child->is_training());
  Tensor x = Tensor::ones({2, 4});
  CHECK(seq.forward(x).to_vector() == seq.forward(x).to_vector());  // deterministic in eval
  seq.train();
  for (auto& [_, child] : seq.named_children()) CHECK(child->is_training());
  Dropout d(0.5f);
  Tensor big = d.forward(Tensor::ones({10000}));
  size_t zeros = 0;
  for (float v : big.to_vector()) {
    CHECK((v == 0.f || v == 2.f));
    zeros += v == 0.f;
  }
  CHECK(zeros > 4700);
  CHECK(zeros < 5300);
}

TEST_CASE("state_dict round trip through safetensors is exact", "[nn][module][safetensors]") {
  const auto path = temp_path("xgrad_state_roundtrip.safetensors");
  Encoder a(tiny(), 2), b(tiny(), 2);
  init::bert_init(a, 0.5f);
  safetensors::save(a, path);
  const LoadReport r = safetensors::load(b, path);
  CHECK(r.ok());
  auto sa = a.state_dict(), sb = b.state_dict();
  for (auto& [n, t] : sa) CHECK(t.to_vector() == sb.at(n).to_vector());
  std::filesystem::remove(path);
}

namespace {
// A module of one's own with an int64 buffer (positions, as Hugging Face's position_ids).
struct WithPositions : Module {
  Tensor positions, scale;
  explicit WithPositions(std::vector<int64_t> ids) {
    positions = register_buffer("position_ids", Tensor::from_ints(ids, {1, ids.size()}));
    scale = register_parameter("scale", Tensor::full({2}, 0.5f));
  }
  Tensor add_buffer(const std::string& name, Tensor t) { return register_buffer(name, t); }
  void swap_child(const std::string& name, std::shared_ptr<Module> m) { replace_module(name, std::move(m)); }
};
}  // namespace

TEST_CASE("int64 buffers round-trip through safetensors; what cannot be written names itself and leaves no file",
          "[nn][module][safetensors]") {
  const auto path = temp_path("xgrad_int_buffer.safetensors");
  WithPositions a({0, 1, 2, 3}), b({9, 9, 9, 9});
  safetensors::save(a, path);
  CHECK(safetensors::load(b, path).ok());
  CHECK(b.positions.dtype() == Dtype::Int64);
  CHECK(b.positions.to_ints() == std::vector<int64_t>{0, 1, 2, 3});
  // the positions, saved as floats, are not cast back into the int64 buffer
  safetensors::write(path, {{"position_ids", Tensor::zeros({1, 4})}, {"scale", Tensor::ones({2})}});
  CHECK_THROWS_WITH(safetensors::load(b, path), Contains("'position_ids' is a float in the file and int64 in the module"));
  safetensors::write(path, {{"position_ids", Tensor::from_ints({0, 1, 2, 3}, {1, 4})}, {"scale", Tensor::from_ints({1, 2}, {2})}});
  CHECK_THROWS_WITH(safetensors::load(b, path), Contains("'scale' is an integer in the file and float32 in the module"));
  CHECK_THROWS_WITH(b.swap_child("anything", nullptr), Contains("with null"));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(a.add_buffer("undefined", Tensor()), Contains("buffer 'undefined' is undefined"));
  a.add_buffer("half", Tensor::ones({2}).to(Dtype::BFloat16));
  CHECK_THROWS_WITH(safetensors::save(a, path), Contains(path) && Contains("'half'") && Contains("bfloat16"));
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    CHECK(entry.path().filename().string().find("xgrad_int_buffer") == std::string::npos);  // no temporary file left
}

TEST_CASE("load_state_dict reports missing, unexpected and mismatched names", "[nn][module]") {
  Linear lin(3, 2);
  StateDict sd = {{"weight", Tensor::ones({2, 4})}, {"extra", Tensor::ones({1})}};
  CHECK_THROWS_WITH(lin.load_state_dict(sd),
                    Contains("missing (1): bias") && Contains("unexpected (1): extra") &&
                        Contains("weight: checkpoint [2, 4] vs module [2, 3]"));
  // strict refuses before copying anything; non-strict copies what fits
  StateDict partial = {{"weight", Tensor::full({2, 3}, 7.f)}};
  CHECK(lin.weight.data()[0] != 7.f);
  const LoadReport r = lin.load_state_dict(partial, /*strict=*/false);
  CHECK(r.missing == std::vector<std::string>{"bias"});
  CHECK(lin.weight.data()[0] == 7.f);
}

TEST_CASE("initialisation: BERT scheme and truncated normal", "[nn][init]") {
  Encoder enc(tiny(), 1);
  init::bert_init(enc, 0.02f);
  for (auto& [n, t] : enc.named_parameters()) {
    const bool is_ln = n.find("LayerNorm") != std::string::npos;
    if (is_ln && n.find("weight") != std::string::npos) CHECK(t.to_vector() == std::vector<float>(t.numel(), 1.f));
    else if (n.find("bias") != std::string::npos) CHECK(t.to_vector() == std::vector<float>(t.numel(), 0.f));
    else {
      double s2 = 0;
      for (float v : t.to_vector()) s2 += double(v) * v;
      CHECK(std::sqrt(s2 / double(t.numel())) == Approx(0.02).epsilon(0.25));
    }
  }
  Tensor t = Tensor::zeros({10000});
  init::trunc_normal_(t, 0.f, 1.f, -0.5f, 0.5f);
  for (float v : t.to_vector()) REQUIRE(std::fabs(v) <= 0.5f);
  Embedding e(5, 3, /*padding_idx=*/2);
  init::bert_init(e);
  CHECK(e.weight.data()[6] == 0.f);
}

TEST_CASE("options and layers validate their settings", "[nn][errors]") {
  TransformerOptions o = tiny();
  o.num_heads = 3;
  CHECK_THROWS_WITH(o.validate(), Contains("hidden_size 8") && Contains("num_heads 3"));
  CHECK_THROWS_WITH(Linear(0, 3), Contains("[Linear]"));
  CHECK_THROWS_WITH(Linear(3, 2).forward(Tensor::zeros({2, 4})), Contains("[Linear]") && Contains("[2, 4]"));
  CHECK_THROWS_WITH(Embedding(4, 2, 4), Contains("padding_idx 4"));
  CHECK_THROWS_WITH(Embedding(4, 2, -2), Contains("padding_idx -2") && Contains("-1 for none"));
  CHECK_THROWS_WITH(ModuleList<Linear>().push_back(nullptr), Contains("sub-module '0' is null"));
  CHECK_THROWS_WITH(activation_from_name("swish"), Contains("'swish'"));
  SelfAttention att(tiny());
  CHECK_THROWS_WITH(att.forward(Tensor::zeros({2, 3, 5}), Tensor()), Contains("[SelfAttention]"));
  // a 0/1 padding mask given where an additive one goes would attend to the padding
  const Tensor mask01 = Tensor::from_vector({1, 1, 0}, {1, 3});
  CHECK_THROWS_WITH(att.forward(Tensor::zeros({1, 3, 8}), mask01), Contains("only 0s and 1s") &&
                                                                      Contains("additive_attention_mask"));
  const Tensor converted = additive_attention_mask(Tensor::from_ints({1, 1, 0}, {1, 3}));  // int64, as Hugging Face's
  CHECK(converted.to_vector()[1] == 0.f);
  CHECK(converted.to_vector()[2] < -1e30f);
  CHECK(att.forward(Tensor::zeros({1, 3, 8}), converted).shape() == Shape{1, 3, 8});
  CHECK(att.forward(Tensor::zeros({1, 3, 8}), Tensor::zeros({1, 3})).shape() == Shape{1, 3, 8});  // no padding: all 0
  Encoder enc(tiny(), 1);  // and the fused inference entry point, which reads the mask itself
  enc.eval();
  NoGradGuard no_grad;
  CHECK_THROWS_WITH(fused_encoder_forward(enc, Tensor::zeros({1, 3, 8}), mask01), Contains("only 0s and 1s"));
  // an int64 0/1 mask (Hugging Face's dtype) on the fused path: the same message, not a dtype error
  CHECK_THROWS_WITH(enc.forward(Tensor::zeros({1, 3, 8}), Tensor::from_ints({1, 1, 0}, {1, 3})), Contains("only 0s and 1s"));
  // and the sparse last layer's entry points (queries at some rows only)
  CHECK_THROWS_WITH(att.forward_queries(Tensor::zeros({1, 1, 8}), Tensor::zeros({1, 3, 8}), mask01), Contains("only 0s and 1s"));
  CHECK_THROWS_WITH((*enc.layer)[0].forward_rows(Tensor::zeros({1, 3, 8}), mask01, OutputRows::first_tokens(1, 3)),
                    Contains("only 0s and 1s"));
}

TEST_CASE("Encoder: checkpoint_activations gives the same loss and gradients", "[nn][checkpoint]") {
  TransformerOptions o = tiny();
  o.hidden_dropout = o.attention_dropout = 0.2f;  // masks must repeat in the recomputation
  Encoder plain(o, 3), ck(o, 3);
  ck.load_state_dict(plain.state_dict());
  ck.checkpoint_activations = true;
  Generator g(3);
  const Tensor x = Tensor::normal({2, 5, 8}, 0.f, 1.f, g);
  auto run = [&](Encoder& e) {
    manual_seed(11);
    const Tensor y = e.forward(x, Tensor());
    Tensor loss = sum(mul(y, y));
    loss.backward();
    return loss.item();
  };
  CHECK(run(plain) == run(ck));
  const auto a = plain.named_parameters(), b = ck.named_parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(a[i].second.grad().to_vector() == b[i].second.grad().to_vector());
  }
}

TEST_CASE("execution options: the environment's spellings, a bad value names the variable; set_execution reaches every layer",
          "[module][errors]") {
  const char* name = "XGRAD_FUSED_INFERENCE";
  ::unsetenv(name);
  CHECK(nn::ExecutionOptions::from_environment().fused_inference);
  for (const char* off : {"0", "off", "false", "no"}) {
    ::setenv(name, off, 1);
    CHECK_FALSE(nn::ExecutionOptions::from_environment().fused_inference);
  }
  for (const char* on : {"1", "on", "true", "yes"}) {
    ::setenv(name, on, 1);
    CHECK(nn::ExecutionOptions::from_environment().fused_inference);
  }
  ::setenv(name, "maybe", 1);
  CHECK_THROWS_WITH(nn::ExecutionOptions::from_environment(), Catch::Contains("XGRAD_FUSED_INFERENCE='maybe'"));
  ::unsetenv(name);
  ::setenv("XGRAD_PADDING_FREE", "1", 1);
  CHECK(nn::ExecutionOptions::from_environment().padding_free);
  ::unsetenv("XGRAD_PADDING_FREE");

  // a module starts from the process default and set_execution reaches all its sub-modules
  nn::TransformerOptions opt;
  opt.hidden_size = 8;
  opt.num_heads = 2;
  opt.intermediate_size = 16;
  const nn::ExecutionOptions saved = nn::default_execution();
  nn::ExecutionOptions unfused;
  unfused.flash_attention = false;
  nn::set_default_execution(unfused);
  nn::Encoder enc(opt, 2);
  nn::set_default_execution(saved);
  CHECK_FALSE(enc.execution().flash_attention);
  nn::ExecutionOptions packed;
  packed.padding_free = true;
  enc.set_execution(packed);
  size_t modules = 0;
  enc.apply([&](nn::Module& m) {
    ++modules;
    CHECK(m.execution().padding_free);
    CHECK(m.execution().flash_attention);
  });
  CHECK(modules > 10);
}
