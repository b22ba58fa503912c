// AlbertForPreTraining against Hugging Face transformers (tools/gen_albert_goldens.py: 4 layers
// from 2 groups of 2 shared layers, a factorised embedding, padding, MLM and sentence-order
// labels): outputs, losses and every gradient; ALBERT's config, names and shared layers.
#include <catch2/catch.hpp>

#include <filesystem>

#include "models/albert/albert.hpp"
#include "models/core/checkpoint.hpp"
#include "tests/golden.hpp"
#include "tests/train_parity.hpp"
#include "tests/temp_path.hpp"

using namespace xg;
using namespace xg::models;
using Catch::Matchers::Contains;
using xg::test::max_scaled_error;

namespace {
const std::string kDir = std::string(XGRAD_TEST_DATA_DIR) + "/albert_a";

// goldens.safetensors (tools/gen_albert_goldens.py) or train_goldens.safetensors (tools/gen_train_goldens.py)
struct Golden : test::SafetensorsGolden {
  explicit Golden(const std::string& name = "goldens.safetensors") : SafetensorsGolden(kDir + "/" + name) {}
};
}  // namespace

TEST_CASE("ALBERT matches transformers' AlbertForPreTraining: outputs, losses and all gradients", "[albert][parity]") {
  const Golden g;
  auto loaded = load_pretrained_as<AlbertForPreTraining>(kDir);
  CHECK(loaded.notes.empty());
  AlbertForPreTraining& m = *loaded.model;
  m.eval();
  const NamedOutputs out =
      m.forward_named(g.inputs(), {{"labels", g.i("labels")}, {"sentence_order_label", g.i("sentence_order_label")}});
  double worst_output = 0;
  for (const char* k : {"last_hidden_state", "pooler_output", "prediction_logits", "sop_logits"}) {
    INFO(k);
    const double e = max_scaled_error(out.at(k), g.f(k));
    CHECK(e < 1e-4);
    worst_output = std::max(worst_output, e);
  }
  for (const char* k : {"loss", "mlm_loss", "sop_loss"}) {
    INFO(k);
    CHECK(out.at(k).item() == Approx(g.f(k).item()).epsilon(1e-5));
  }
  out.at("loss").backward();
  double worst = 0;
  size_t checked = 0;
  for (auto& [n, p] : m.named_parameters()) {
    INFO(n);
    REQUIRE(p.grad().defined());
    const double e = max_scaled_error(p.grad(), g.f("grad." + n), test::kGradientFloor);
    CHECK(e < 1e-3);
    worst = std::max(worst, e);
    ++checked;
  }
  CHECK(checked == g.file.tensors.size() - 12);  // every gradient the generator wrote
  CHECK(checked == 80);  // 4 distinct layers of 16 tensors, not 8 layer applications
  size_t reference_parameters = 0;  // transformers' num_parameters(): each shared or tied tensor once
  for (const auto& [name, t] : g.file.tensors)
    if (name.rfind("grad.", 0) == 0) reference_parameters += g.f(name).numel();
  CHECK(m.num_parameters() == reference_parameters);  // what bert_pretrain prints
  {  // the fused inference path (gradients off): the same outputs at real positions, zero at padding
    NoGradGuard no_grad;
    const NamedOutputs fused = m.forward_named(g.inputs());
    const Tensor mask = g.inputs().attention_mask;
    for (const char* k : {"last_hidden_state", "prediction_logits"}) {
      INFO("fused " << k);
      CHECK(test::max_scaled_error_real(fused.at(k), g.f(k), mask) < 1e-4);
    }
    for (const char* k : {"pooler_output", "sop_logits"}) {
      INFO("fused " << k);
      CHECK(max_scaled_error(fused.at(k), g.f(k)) < 1e-4);
    }
    REQUIRE(mask.defined());
    const std::vector<float> m01 = mask.to_vector(), hidden = fused.at("last_hidden_state").to_vector();
    const size_t H = hidden.size() / m01.size();
    size_t padded = 0;
    for (size_t p = 0; p < m01.size(); ++p)
      if (m01[p] == 0.f) padded += hidden[p * H] == 0.f && hidden[p * H + H - 1] == 0.f;
    CHECK(padded > 0);  // the golden's batch has padding, and the fused path skipped it
  }
  // what bert_pretrain trains: the losses at the masked positions, the last layer computed there only
  const double pretraining = test::check_pretraining_parity(
      m, g.inputs(), test::pretraining_targets(g.i("labels"), g.i("sentence_order_label")), g.f("loss").item(),
      [&](const std::string& n) { return g.f("grad." + n); });
  std::printf("parity albert_a: outputs max error %.1e, loss %.6f/%.6f, %zu gradients, max error %.1e (forward_pretraining "
              "%.1e)\n", worst_output, out.at("loss").item(), g.f("loss").item(), checked, worst, pretraining);
}

TEST_CASE("ALBERT's pre-training update equals transformers + torch AdamW: shared layers stepped once", "[albert][parity][train]") {
  // tools/gen_train_goldens.py albert: 4 distinct layers applied 8 times; MLM + SOP loss; eps 1e-6
  const Golden g("train_goldens.safetensors");
  auto m = std::move(load_pretrained_as<AlbertForPreTraining>(kDir).model);
  optim::AdamOptions adam;
  adam.eps = 1e-6f;
  const double worst = test::check_training_steps(*m, g, adam, [&](const std::string& k) -> Labels {
    return {{"labels", g.i("labels" + k)}, {"sentence_order_label", g.i("sentence_order_label" + k)}};
  });
  std::printf("parity albert_a training: 6 AdamW steps, weights max scaled error %.1e\n", worst);
}

TEST_CASE("ALBERT config: transformers' defaults, presets and checks", "[albert][config]") {
  const AlbertConfig d;
  CHECK(d.vocab_size == 30000);
  CHECK(d.embedding_size == 128);
  CHECK(d.hidden_act == "gelu_new");
  CHECK(d.num_hidden_groups == 1);
  CHECK(d.to_json().at("model_type") == "albert");
  CHECK(AlbertConfig::preset("base").hidden_size == 768);
  CHECK(AlbertConfig::preset("xxlarge").num_attention_heads == 64);
  CHECK_THROWS_WITH(AlbertConfig::preset("huge"), Contains("[AlbertConfig] unknown preset 'huge'"));
  nlohmann::json bad = AlbertConfig::preset("tiny").to_json();
  bad["num_hidden_groups"] = 3;
  CHECK_THROWS_WITH(AlbertConfig::from_json(bad, "c.json"), Contains("num_hidden_groups 3 is more than num_hidden_layers 2") &&
                                                               Contains("c.json"));
  bad = AlbertConfig::preset("tiny").to_json();
  bad["embedding_size"] = 0;
  CHECK_THROWS_WITH(AlbertConfig::from_json(bad, "c.json"), Contains("embedding_size"));
  bad = AlbertConfig::preset("tiny").to_json();
  bad["pad_token_id"] = 30000;
  CHECK_THROWS_WITH(AlbertConfig::from_json(bad, "c.json"), Contains("[AlbertConfig] pad_token_id 30000"));
  // layers to groups as transformers divides: Python's [int(i / (18 / 14)) for i in range(18)]
  AlbertConfig odd = AlbertConfig::preset("tiny");
  odd.num_hidden_layers = 18;
  odd.num_hidden_groups = 14;
  const AlbertTransformer t(odd);
  std::vector<size_t> groups;
  for (size_t i = 0; i < 18; ++i) groups.push_back(t.group_of_layer(i));
  CHECK(groups == std::vector<size_t>{0, 0, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 9, 10, 10, 11, 12, 13});
}

TEST_CASE("ALBERT checkpoints: transformers' names both ways, heads by architecture", "[albert][registry]") {
  const auto original = nn::safetensors::read(kDir + "/model.safetensors");
  auto loaded = load_pretrained(kDir);
  CHECK(loaded.model->architecture() == "AlbertForPreTraining");
  const std::string dir = temp_path("xgrad_albert_ckpt");
  save_pretrained(*loaded.model, dir);
  const auto saved = nn::safetensors::read(dir + "/model.safetensors");
  std::vector<std::string> a, b;
  for (const auto& [n, _] : original.tensors) a.push_back(n);
  for (const auto& [n, _] : saved.tensors) b.push_back(n);
  CHECK(a == b);  // predictions.decoder.* stay tied, not written, as transformers writes them
  // The MLM-only class from the pre-training checkpoint: the SOP head and the pooler are unused.
  auto mlm = load_pretrained(dir, 0, "AlbertForMaskedLM");
  CHECK(mlm.notes.size() == 1);
  const Golden g;
  mlm.model->eval();
  NoGradGuard no_grad;
  const NamedOutputs out = mlm.model->forward_named(g.inputs());
  // fused inference: padded positions are zero, real ones match
  CHECK(test::max_scaled_error_real(out.at("logits"), g.f("prediction_logits"), g.inputs().attention_mask) < 1e-4);
  CHECK_THROWS_WITH(loaded.model->forward_named(g.inputs(), {{"labels", g.i("labels")}}),
                    Contains("both labels and sentence_order_label"));
  std::filesystem::remove_all(dir);
}
