// ELECTRA against Hugging Face transformers (tools/gen_electra_goldens.py: the discriminator, the
// generator and the four task heads, each with a padded batch, labels, outputs, loss and every
// gradient); its config and checkpoints; replaced-token detection (the generator's samples, the
// loss and its weighting, no gradient through the samples, shared embeddings); and pre-training
// with bert_pretrain's task: the loss falls, checkpoints are transformers', resume is exact.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "autograd/engine.hpp"
#include "models/core/checkpoint.hpp"
#include "models/core/model_spec.hpp"
#include "models/core/registry.hpp"
#include "models/electra/electra.hpp"
#include "models/electra/electra_heads.hpp"
#include "nn/safetensors.hpp"
#include "tests/golden.hpp"
#include "tests/head_parity.hpp"
#include "tests/run_files.hpp"
#include "tests/temp_path.hpp"

using namespace xg;
using namespace xg::models;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
std::string electra_dir(const std::string& name) { return std::string(XGRAD_TEST_DATA_DIR) + "/electra/" + name; }

// A small discriminator with a generator over its embeddings (embeddings 16 wide, hidden 32, generator 16).
ElectraConfig rtd_config() {
  ElectraConfig c;
  c.vocab_size = 40;
  c.embedding_size = 16;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 48;
  c.max_position_embeddings = 16;
  c.generator = ElectraGeneratorSize{16, 1, 24, 2};
  return c;
}

// Two sequences of 8, the second padded after 6; masked at positions 1, 3 (first) and 2, 5 (second).
struct RtdBatch {
  ModelInputs in;
  PretrainingTargets t;
};
RtdBatch rtd_batch(uint64_t seed) {
  const int64_t mask_id = 4;
  RtdBatch b;
  b.in = make_inputs(2, 8, {2, mask_id, 11, mask_id, 17, 23, 29, 3, 2, 31, 19, 13, mask_id, 3, 0, 0}, {},
                     {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0});
  b.t = make_pretraining_targets({1, 3, 10, 12}, {7, 9, 19, 37}, {});
  b.t.sample_seed = seed;
  return b;
}
}  // namespace

TEST_CASE("ELECTRA matches transformers: discriminator, generator and heads, outputs, losses, all gradients", "[electra][parity]") {
  test::check_head_parity(electra_dir("pretraining"), "ElectraForPreTraining", {"labels"}, {"logits"});
  test::check_head_parity(electra_dir("mlm"), "ElectraForMaskedLM", {"labels"}, {"logits"});
  test::check_head_parity(electra_dir("seq"), "ElectraForSequenceClassification", {"labels"}, {"logits"});
  test::check_head_parity(electra_dir("token"), "ElectraForTokenClassification", {"labels"}, {"logits"});
  test::check_head_parity(electra_dir("qa"), "ElectraForQuestionAnswering", {"start_positions", "end_positions"},
                          {"start_logits", "end_logits"});
  test::check_head_parity(electra_dir("multiple_choice"), "ElectraForMultipleChoice", {"labels"}, {"logits"});
  // the widths: projected where they differ, not where they are equal
  CHECK(load_pretrained_as<ElectraForPreTraining>(electra_dir("pretraining")).model->electra->embeddings_project);
  CHECK(!load_pretrained_as<ElectraForSequenceClassification>(electra_dir("seq")).model->electra->embeddings_project);
}

TEST_CASE("ELECTRA checkpoints: transformers' names both ways, heads by architecture", "[electra][registry]") {
  for (const char* name : {"pretraining", "mlm", "multiple_choice"}) {
    CAPTURE(name);
    const auto original = nn::safetensors::read(electra_dir(name) + "/model.safetensors");
    auto loaded = load_pretrained(electra_dir(name));
    const std::string dir = temp_path(std::string("xgrad_electra_ckpt_") + name);
    save_pretrained(*loaded.model, dir);
    const auto saved = nn::safetensors::read(dir + "/model.safetensors");
    std::vector<std::string> a, b;
    for (const auto& [n, _] : original.tensors) a.push_back(n);
    for (const auto& [n, _] : saved.tensors) b.push_back(n);
    CHECK(a == b);  // generator_lm_head.weight stays tied, unwritten, as transformers writes it
    const auto config = read_json(fs::path(dir) / "config.json");
    CHECK(config["model_type"] == "electra");
    CHECK(!config.contains("generator"));  // Hugging Face's models have none
    fs::remove_all(dir);
  }
  // the discriminator's checkpoint into a classifier: its prediction head dropped, the classifier new
  auto seq = load_pretrained(electra_dir("pretraining"), 0, "ElectraForSequenceClassification");
  std::sort(seq.newly_initialised.begin(), seq.newly_initialised.end());
  CHECK(seq.newly_initialised == std::vector<std::string>{"classifier.dense.bias", "classifier.dense.weight",
                                                          "classifier.out_proj.bias", "classifier.out_proj.weight"});
  std::sort(seq.dropped.begin(), seq.dropped.end());
  CHECK(seq.dropped == std::vector<std::string>{"discriminator_predictions.dense.bias", "discriminator_predictions.dense.weight",
                                                "discriminator_predictions.dense_prediction.bias",
                                                "discriminator_predictions.dense_prediction.weight"});
  CHECK(registered_architectures("electra").size() == 7);
}

TEST_CASE("ELECTRA config: transformers' defaults, the paper's presets with their generators, checks", "[electra][config]") {
  const ElectraConfig d;
  CHECK(d.hidden_size == 256);
  CHECK(d.embedding_size == 128);
  CHECK(d.summary_type == "first");
  CHECK(!d.generator);
  const ElectraConfig small = ElectraConfig::preset("small");
  CHECK(small.num_hidden_layers == 12);
  REQUIRE(small.generator);
  CHECK(*small.generator == ElectraGeneratorSize{64, 1, 256, 12});  // a quarter (table 7)
  CHECK(*ElectraConfig::preset("base").generator == ElectraGeneratorSize{256, 4, 1024, 12});  // a third
  CHECK(ElectraConfig::preset("tiny").generator_config().hidden_size == 64);
  CHECK(ElectraConfig::preset("tiny").generator_config().embedding_size == 128);  // the shared embeddings' width
  CHECK(ElectraConfig::from_json(small.to_json()).generator == small.generator);
  CHECK(spec_model_type("electra-small") == "electra");
  CHECK_THROWS_WITH(ElectraConfig::preset("huge"), Contains("[ElectraConfig] unknown preset 'huge'"));
  nlohmann::json bad = small.to_json();
  bad["generator"]["num_attention_heads"] = 3;
  CHECK_THROWS_WITH(ElectraConfig::from_json(bad, "c.json"),
                    Contains("generator.hidden_size 64 is not divisible by generator.num_attention_heads 3") && Contains("c.json"));
  bad = small.to_json();
  bad["generator"].erase("num_hidden_layers");
  CHECK_THROWS_WITH(ElectraConfig::from_json(bad, "c.json"), Contains("generator has no num_hidden_layers"));
  bad = small.to_json();
  bad["generator"]["hidden_size"] = "wide";
  CHECK_THROWS_WITH(ElectraConfig::from_json(bad, "c.json"), Contains("generator.hidden_size"));
  // the multiple-choice summary as transformers' SequenceSummary reads it
  nlohmann::json j = small.to_json();
  j["summary_activation"] = nullptr;  // no activation
  CHECK(ElectraConfig::from_json(j).summary_activation.empty());
  CHECK(ElectraConfig::from_json(ElectraConfig::from_json(j).to_json()).summary_activation.empty());
  bad = small.to_json();
  bad["summary_proj_to_labels"] = true;
  CHECK_THROWS_WITH(ElectraConfig::from_json(bad, "c.json"), Contains("summary_proj_to_labels true is not supported"));
  bad = small.to_json();
  bad["summary_activation"] = "swishy";
  CHECK_THROWS_WITH(ElectraConfig::from_json(bad, "c.json"), Contains("summary_activation"));
  bad = small.to_json();
  bad["generator"]["hidden_size"] = 0;
  CHECK_THROWS_WITH(ElectraConfig::from_json(bad, "c.json"), Contains("generator.hidden_size"));
  bad = small.to_json();
  bad["summary_type"] = "mean";
  CHECK_THROWS_WITH(ElectraConfig::from_json(bad, "c.json"), Contains("summary_type 'mean' is not supported"));
}

TEST_CASE("sampling from the generator draws from its softmax, the same for a sequence however batched", "[electra][rtd]") {
  Generator rng(7);
  CHECK(sample_from_logits(Tensor::from_vector({0, 0, 50, 0}, {1, 4}), {0.999}) == std::vector<int64_t>{2});
  const std::vector<double> p = {0.6, 0.3, 0.1};
  std::vector<float> row;
  for (double v : p) row.push_back(float(std::log(v)));
  std::vector<float> rows;
  std::vector<double> uniforms;
  const size_t n = 6000;
  for (size_t i = 0; i < n; ++i) {
    rows.insert(rows.end(), row.begin(), row.end());
    uniforms.push_back(rng.uniform());
  }
  std::vector<size_t> seen(3, 0);
  for (int64_t s : sample_from_logits(Tensor::from_vector(rows, {n, 3}), uniforms)) ++seen[size_t(s)];
  for (size_t k = 0; k < 3; ++k) {
    CAPTURE(k);
    CHECK(double(seen[k]) / double(n) == Approx(p[k]).margin(0.025));  // 4+ standard deviations
  }
  CHECK_THROWS_WITH(sample_from_logits(Tensor::from_vector(rows, {n, 3}), {0.5}), Contains("1 uniforms for 6000 rows"));
  // A sequence's draws depend on its index in the stream and the position, not on the batch it is in:
  // sequences 5 and 6 as one batch, and sequence 6 alone
  PretrainingTargets both = make_pretraining_targets({1, 3, 8 + 2}, {0, 0, 0}, {});
  both.sample_seed = 99;
  both.first_sequence = 5;
  PretrainingTargets alone = make_pretraining_targets({2}, {0}, {});
  alone.sample_seed = 99;
  alone.first_sequence = 6;
  const std::vector<double> u = masked_position_uniforms(both, 8);
  CHECK(u[2] == masked_position_uniforms(alone, 8)[0]);
  CHECK(u[0] != u[1]);
  alone.sample_seed = 100;
  CHECK(u[2] != masked_position_uniforms(alone, 8)[0]);
}

TEST_CASE("replaced-token detection: the loss, its weight, shared embeddings, no gradient through the samples", "[electra][rtd]") {
  ElectraForPreTraining m(rtd_config());
  Generator init(3);
  m.init_weights(init);
  m.eval();  // no dropout: two runs must agree
  REQUIRE(m.generator);
  CHECK(m.generator->electra->embeddings.get() == m.electra->embeddings.get());
  CHECK(m.generator->generator_lm_head->decoder_weight.impl() == m.electra->embeddings->word_embeddings->weight.impl());
  size_t own = 0;  // each shared tensor counted once
  for (const auto& [n, p] : m.named_parameters()) own += p.numel();
  CHECK(m.num_parameters() == own);
  CHECK(m.named_parameters().size() < m.named_parameters(/*all_names=*/true).size());

  const RtdBatch b = rtd_batch(11);
  const PretrainingOutput out = m.forward_pretraining(b.in, b.t);
  REQUIRE(out.replaced_loss.defined());
  CHECK(out.loss.item() == Approx(out.mlm_loss.item() + ElectraForPreTraining::kDiscriminatorWeight * out.replaced_loss.item()));
  CHECK(out.tokens == 14);  // the real tokens: padding is neither original nor replaced
  CHECK(out.replaced <= 4);  // only masked positions can be replaced
  CHECK(out.mlm_logits.size(0) == 4);
  // the same seed draws the same samples; a random generator replaces nearly every masked token
  const PretrainingOutput again = m.forward_pretraining(b.in, b.t);
  CHECK(again.loss.item() == out.loss.item());
  size_t replaced = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) replaced += m.forward_pretraining(b.in, rtd_batch(seed).t).replaced;
  CHECK(m.forward_pretraining(b.in, rtd_batch(12).t).loss.item() != out.loss.item());  // another seed, other draws
  CHECK(replaced >= 70);  // of 80 masked tokens, 40 candidates each

  // The discriminator's loss reaches the shared embeddings but not the generator through its samples.
  m.zero_grad();
  m.forward_pretraining(b.in, b.t).replaced_loss.backward();
  auto grad_size = [](const Tensor& p) {
    if (!p.grad().defined()) return 0.0;
    double s = 0;
    for (float v : p.grad().to_vector()) s += std::abs(v);
    return s;
  };
  for (const auto& [n, p] : m.named_parameters()) {
    CAPTURE(n);
    if (n.rfind("generator.", 0) == 0) CHECK(grad_size(p) == 0);
  }
  CHECK(grad_size(m.electra->embeddings->word_embeddings->weight) > 0);
  CHECK(grad_size(m.discriminator_predictions->dense_prediction->weight) > 0);
  // ... and the generator's MLM loss reaches the generator and the shared embeddings
  m.zero_grad();
  m.forward_pretraining(b.in, b.t).mlm_loss.backward();
  CHECK(grad_size(m.generator->generator_predictions->dense->weight) > 0);
  CHECK(grad_size(m.electra->embeddings->word_embeddings->weight) > 0);
  CHECK(grad_size(m.discriminator_predictions->dense_prediction->weight) == 0);

  // Saved and loaded: the generator comes back (its sizes in config.json, its tensors under
  // "generator."), the shared embeddings once more shared, the same loss.
  const std::string dir = temp_path("xgrad_electra_rtd");
  save_pretrained(m, dir);
  CHECK(read_json(fs::path(dir) / "config.json").contains("generator"));
  auto loaded = load_pretrained_as<ElectraForPreTraining>(dir);
  CHECK(loaded.notes.empty());
  REQUIRE(loaded.model->generator);
  CHECK(loaded.model->generator->electra->embeddings.get() == loaded.model->electra->embeddings.get());
  CHECK(loaded.model->forward_pretraining(b.in, b.t).loss.item() == Approx(out.loss.item()).epsilon(1e-6));
  fs::remove_all(dir);

  // transformers' labels.float(): float labels give the int64 labels' loss; other values are refused;
  // no real token gives a zero loss, not 0/0
  {
    const ModelInputs in = make_inputs(1, 4, {2, 9, 5, 3});
    const Tensor loss = m.forward_named(in, {{"labels", Tensor::from_ints({0, 1, 0, 0}, {1, 4})}}).at("loss");
    CHECK(m.forward_named(in, {{"labels", Tensor::from_vector({0, 1, 0, 0}, {1, 4})}}).at("loss").item() == loss.item());
    CHECK_THROWS_WITH(m.forward_named(in, {{"labels", Tensor::from_ints({0, 2, 0, 0}, {1, 4})}}),
                      Contains("labels hold 2 at position 1"));
    const ModelInputs none = make_inputs(1, 4, {2, 9, 5, 3}, {}, {0, 0, 0, 0});
    CHECK(m.forward_named(none, {{"labels", Tensor::from_ints({0, 1, 0, 0}, {1, 4})}}).at("loss").item() == 0.f);
  }

  // A discriminator without a generator (as transformers' checkpoints are) cannot train this way.
  auto hf = load_pretrained_as<ElectraForPreTraining>(electra_dir("pretraining"));
  CHECK_THROWS_WITH(hf.model->forward_pretraining(make_inputs(1, 4, {2, 4, 5, 3}), make_pretraining_targets({1}, {7}, {})),
                    Contains("needs a generator") && Contains("\"generator\""));
}

TEST_CASE("pre-training a discriminator without a generator is refused before any data is read", "[electra][pretrain][errors]") {
  const std::string dir = temp_path("xgrad_electra_no_generator");
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(electra_dir("pretraining") + "/" + f, dir + "/" + f);
  {  // the 30 tokens of its vocabulary
    std::ofstream vocab(dir + "/vocab.txt");
    vocab << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (int i = 5; i < 30; ++i) vocab << "w" << i << "\n";
  }
  PretrainRun r = small_pretrain_run("", temp_path("xgrad_electra_no_generator_run"), 4);
  r.task.train_vocab = 0;
  r.task.seq_len = 8;  // the checkpoint has 12 positions
  r.task.init_from = dir;
  r.task.corpus = dir + "/no_such_corpus.txt";  // refused before the corpus is opened
  CHECK_THROWS_WITH(r.go(), Contains("needs a generator") && Contains("\"generator\""));
  CHECK(!fs::exists(fs::path(r.trainer.out) / "checkpoint-000004"));
  fs::remove_all(dir);
  fs::remove_all(r.trainer.out);
}

TEST_CASE("bert_pretrain --model electra-tiny: replaced-token detection learns, checkpoints, exact resume", "[electra][pretrain]") {
  PretrainRun r = small_pretrain_run("electra-tiny", temp_path("xgrad_pretrain_electra"), 30);
  REQUIRE(r.go() == 30);
  std::vector<double> losses, rtd;
  bool evaluated = false;
  for (const auto& row : metrics_rows(r.trainer.out)) {
    if (row.contains("loss")) {
      losses.push_back(row["loss"]);
      REQUIRE(row.contains("rtd_loss"));
      rtd.push_back(row["rtd_loss"]);
      CHECK(row["loss"].get<double>() == Approx(row["mlm_loss"].get<double>() + 50 * row["rtd_loss"].get<double>()));
      CHECK(row.contains("rtd_acc"));
    }
    if (row.contains("eval_rtd_precision") && row.contains("eval_rtd_recall") && row.contains("eval_mlm_acc")) evaluated = true;
  }
  REQUIRE(losses.size() == 30);
  CHECK(losses.back() < losses.front() - 1.0);
  CHECK(evaluated);
  const fs::path ckpt = fs::path(r.trainer.out) / "checkpoint-000030";
  const auto config = read_json(ckpt / "config.json");
  CHECK(config["architectures"][0] == "ElectraForPreTraining");
  CHECK(config.contains("generator"));
  CHECK(read_json(ckpt / "training_state.json")["task"] == "rtd");
  bool generator_saved = false;
  for (const auto& [n, _] : nn::safetensors::read((ckpt / "model.safetensors").string()).tensors)
    generator_saved |= n.rfind("generator.electra.encoder.", 0) == 0;
  CHECK(generator_saved);
  fs::remove_all(r.trainer.out);

  // stopped after 2 of 6 steps and resumed: the same weights as 6 steps at once
  PretrainRun full = small_pretrain_run("electra-tiny", temp_path("xgrad_pretrain_electra_full"), 6);
  full.trainer.eval_every = 0;
  full.go();
  PretrainRun part = small_pretrain_run("electra-tiny", temp_path("xgrad_pretrain_electra_part"), 6);
  part.trainer.eval_every = 0;
  part.trainer.stop_at = 2;
  REQUIRE(part.go() == 2);
  PretrainRun resumed;
  resumed.trainer.out = resumed.trainer.resume = part.trainer.out;
  resumed.trainer.quiet = true;
  resumed.trainer.eval_every = 0;
  REQUIRE(resumed.go() == 6);
  CHECK(weight_difference(full.trainer.out + "/checkpoint-000006/model.safetensors",
                          part.trainer.out + "/checkpoint-000006/model.safetensors") == 0);
  fs::remove_all(full.trainer.out);
  fs::remove_all(part.trainer.out);
}
