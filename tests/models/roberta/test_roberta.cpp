// RobertaForMaskedLM against Hugging Face transformers (tools/gen_roberta_goldens.py: a checkpoint
// directory as save_pretrained writes it, inputs with padding, outputs, loss and every gradient);
// RoBERTa's positions, config defaults and names.
#include <catch2/catch.hpp>

#include <filesystem>

#include "models/core/checkpoint.hpp"
#include "models/roberta/roberta.hpp"
#include "tests/golden.hpp"
#include "tests/train_parity.hpp"
#include "tests/temp_path.hpp"

using namespace xg;
using namespace xg::models;
using Catch::Matchers::Contains;
using xg::test::max_scaled_error;

namespace {
const std::string kDir = std::string(XGRAD_TEST_DATA_DIR) + "/roberta_a";

// goldens.safetensors (tools/gen_roberta_goldens.py) or train_goldens.safetensors (tools/gen_train_goldens.py)
struct Golden : test::SafetensorsGolden {
  explicit Golden(const std::string& name = "goldens.safetensors") : SafetensorsGolden(kDir + "/" + name) {}
};
}  // namespace

TEST_CASE("RoBERTa matches transformers' RobertaForMaskedLM: outputs, loss and all gradients", "[roberta][parity]") {
  const Golden g;
  auto loaded = load_pretrained_as<RobertaForMaskedLM>(kDir);
  CHECK(loaded.notes.empty());
  RobertaForMaskedLM& m = *loaded.model;
  m.eval();
  const NamedOutputs out = m.forward_named(g.inputs(), {{"labels", g.i("labels")}});
  const double hidden = max_scaled_error(out.at("last_hidden_state"), g.f("last_hidden_state"));
  const double logits = max_scaled_error(out.at("logits"), g.f("logits"));
  CHECK(hidden < 1e-4);
  CHECK(logits < 1e-4);
  CHECK(out.at("loss").item() == Approx(g.f("loss").item()).epsilon(1e-5));
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
  CHECK(checked == g.file.tensors.size() - 6);  // every gradient the generator wrote
  // The position table's padding row gets no gradient, as nn.Embedding(padding_idx=1) gives none.
  const auto pos_grad = m.roberta->embeddings->position_embeddings->weight.grad().to_vector();
  const size_t H = m.config.hidden_size;
  for (size_t k = 0; k < H; ++k) REQUIRE(pos_grad[1 * H + k] == 0.f);
  const double pretraining = test::check_pretraining_parity(m, g.inputs(), test::pretraining_targets(g.i("labels")),
                                                            g.f("loss").item(),
                                                            [&](const std::string& n) { return g.f("grad." + n); });
  std::printf("parity roberta_a: hidden %.1e logits %.1e, loss %.6f/%.6f, %zu gradients, max error %.1e "
              "(forward_pretraining %.1e)\n", hidden, logits, out.at("loss").item(), g.f("loss").item(), checked, worst,
              pretraining);
}

TEST_CASE("RoBERTa positions count from padding_idx + 1 over real tokens", "[roberta][inputs]") {
  RobertaConfig c = RobertaConfig::preset("tiny");
  c.vocab_size = 50;
  c.max_position_embeddings = 12;
  RobertaEmbeddings e(c);
  const ModelInputs in = pad_sequences({{{0, 7, 8, 2}, {}}, {{0, 9}, {}}}, c.pad_token_id);
  CHECK(e.default_position_ids(in).to_ints() == std::vector<int64_t>{2, 3, 4, 5, 2, 3, 1, 1});
  // A bare RobertaModel runs the same embeddings: explicit positions equal to the defaults change nothing.
  RobertaModel model(c);
  Generator gen(1);
  model.init_weights(gen);
  model.eval();
  NoGradGuard no_grad;
  const auto by_default = model.forward(in).last_hidden_state.to_vector();
  ModelInputs explicit_positions = in;
  explicit_positions.position_ids = e.default_position_ids(in);
  CHECK(model.forward(explicit_positions).last_hidden_state.to_vector() == by_default);
  // 10 real tokens need positions up to 11 in a table of 12: one more is out of range.
  const ModelInputs full = pad_sequences({{std::vector<int64_t>(10, 5), {}}}, c.pad_token_id);
  CHECK_NOTHROW(model.forward(full));
  const ModelInputs too_long = pad_sequences({{std::vector<int64_t>(11, 5), {}}}, c.pad_token_id);
  CHECK_THROWS_WITH(model.forward(too_long), Contains("sequence length 11 exceeds max_position_embeddings 12 (positions start at 2)"));
}

TEST_CASE("RoBERTa config: roberta-base defaults, presets and checks", "[roberta][config]") {
  const RobertaConfig d;
  CHECK(d.vocab_size == 50265);
  CHECK(d.max_position_embeddings == 514);
  CHECK(d.type_vocab_size == 1);
  CHECK(d.pad_token_id == 1);
  CHECK(d.layer_norm_eps == 1e-5f);
  const nlohmann::json j = d.to_json();
  CHECK(j.at("model_type") == "roberta");
  CHECK(j.at("bos_token_id") == 0);
  CHECK(j.at("eos_token_id") == 2);
  CHECK(RobertaConfig::preset("base").hidden_size == 768);
  CHECK(RobertaConfig::preset("large").num_hidden_layers == 24);
  CHECK_THROWS_WITH(RobertaConfig::preset("huge"), Contains("[RobertaConfig] unknown preset 'huge'"));
  // fields a config.json leaves out read as transformers' RobertaConfig() reads them
  const RobertaConfig sparse = RobertaConfig::from_json({{"model_type", "roberta"}}, "sparse.json");
  CHECK(sparse.max_position_embeddings == 512);
  CHECK(sparse.type_vocab_size == 2);
  CHECK(sparse.layer_norm_eps == 1e-12f);
  CHECK(sparse.vocab_size == 50265);
  CHECK(sparse.pad_token_id == 1);
  CHECK(RobertaConfig::from_json(j, "full.json").max_position_embeddings == 514);
  nlohmann::json bad = j;
  bad["max_position_embeddings"] = 2;
  CHECK_THROWS_WITH(RobertaConfig::from_json(bad, "c.json"), Contains("max_position_embeddings 2") && Contains("c.json"));
  bad = j;
  bad["eos_token_id"] = -1;
  CHECK_THROWS_WITH(RobertaConfig::from_json(bad, "c.json"), Contains("eos_token_id"));
  bad = j;
  bad["hidden_size"] = 100;
  CHECK_THROWS_WITH(RobertaConfig::from_json(bad, "c.json"), Contains("[RobertaConfig] hidden_size 100"));
}

TEST_CASE("RoBERTa checkpoints: transformers' names both ways, the registry builds either class", "[roberta][registry]") {
  const auto original = nn::safetensors::read(kDir + "/model.safetensors");
  auto loaded = load_pretrained(kDir);
  CHECK(loaded.model->architecture() == "RobertaForMaskedLM");
  CHECK(loaded.model->model_type() == "roberta");
  const std::string dir = temp_path("xgrad_roberta_ckpt");
  save_pretrained(*loaded.model, dir);
  const auto saved = nn::safetensors::read(dir + "/model.safetensors");
  std::vector<std::string> a, b;
  for (const auto& [n, _] : original.tensors) a.push_back(n);
  for (const auto& [n, _] : saved.tensors) b.push_back(n);
  CHECK(a == b);  // lm_head.decoder.* stay tied, not written, as transformers writes them
  const nlohmann::json config = config::read_json_file(dir + "/config.json", "test");
  CHECK(config.at("architectures") == nlohmann::json::array({"RobertaForMaskedLM"}));
  CHECK(config.at("pad_token_id") == 1);
  // The bare encoder from the MLM checkpoint: the LM head is reported unused.
  auto bare = load_pretrained(dir, 0, "RobertaModel");
  CHECK(bare.model->architecture() == "RobertaModel");
  CHECK(bare.notes.size() == 2);  // the pooler is new, lm_head is unused
  const Golden g;
  auto& mlm = dynamic_cast<RobertaForMaskedLM&>(*loaded.model);
  mlm.eval();
  bare.model->eval();
  NoGradGuard no_grad;
  // fused inference: padded positions are zero, real ones match
  CHECK(test::max_scaled_error_real(dynamic_cast<RobertaModel&>(*bare.model).forward(g.inputs()).last_hidden_state,
                              g.f("last_hidden_state"), g.inputs().attention_mask) < 1e-4);
  std::filesystem::remove_all(dir);
}

TEST_CASE("RoBERTa's pre-training update equals transformers + torch AdamW, step for step", "[roberta][parity][train]") {
  // tools/gen_train_goldens.py roberta: RoBERTa's betas (0.9, 0.98) and eps 1e-6
  const Golden g("train_goldens.safetensors");
  auto m = std::move(load_pretrained_as<RobertaForMaskedLM>(kDir).model);
  optim::AdamOptions adam;
  adam.beta2 = 0.98f;
  adam.eps = 1e-6f;
  const double worst = test::check_training_steps(*m, g, adam, [&](const std::string& k) -> Labels {
    return {{"labels", g.i("labels" + k)}};
  });
  std::printf("parity roberta_a training: 6 AdamW steps, weights max scaled error %.1e\n", worst);
}
