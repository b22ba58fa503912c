// A model family added from outside the library, as docs/adding_a_family.md walks through it: a
// config, a base model, a masked-LM head and a sequence-classification head, registered with
// register_family. It then pre-trains, fine-tunes, saves and reloads through the code the
// programs run (run_pretraining, run_finetuning, load_pretrained), none of which names it.
//
// The "toy" encoder is deliberately small: embeddings, a LayerNorm and one residual GELU layer
// per token (no attention); its classifier reads the mean of the real tokens' states.
#include <catch2/catch.hpp>

#include <filesystem>
#include <stdexcept>

#include "autograd/ops.hpp"
#include "models/core/checkpoint.hpp"
#include "models/core/config_fields.hpp"
#include "models/core/heads.hpp"
#include "models/core/pretraining.hpp"
#include "models/core/registry.hpp"
#include "nn/init.hpp"
#include "nn/layers.hpp"
#include "tests/finetune_fixtures.hpp"
#include "tests/run_files.hpp"
#include "tests/temp_path.hpp"
#include "training/tasks/classification.hpp"
#include "training/tasks/pretraining.hpp"

using namespace xg;
using namespace xg::models;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// 1. The config: each field once, with Hugging Face's names.
#define TOY_CONFIG_FIELDS(X)                           \
  X(size_t, vocab_size, 1000, config::positive)        \
  X(size_t, hidden_size, 32, config::positive)         \
  X(size_t, max_position_embeddings, 128, config::positive) \
  X(size_t, type_vocab_size, 2, config::positive)      \
  X(float, initializer_range, 0.02f, config::above_zero) \
  X(int64_t, pad_token_id, 0, config::non_negative)

struct ToyConfig {
  static constexpr const char* kName = "ToyConfig";
  static constexpr const char* kModelType = "toy";
  XG_CONFIG_FIELDS(TOY_CONFIG_FIELDS)

  static ToyConfig preset(const std::string& size) {
    if (size == "tiny") return ToyConfig{};
    throw std::invalid_argument("[ToyConfig] unknown preset '" + size + "' (tiny)");
  }
  void validate() const {
    config::check_fields(*this);
    if (size_t(pad_token_id) >= vocab_size) throw std::invalid_argument("[ToyConfig] pad_token_id outside the vocabulary");
  }
  InputLimits input_limits() const { return {vocab_size, type_vocab_size, max_position_embeddings}; }
  nlohmann::json to_json() const { return config::to_typed_json(*this); }
  static ToyConfig from_json(const nlohmann::json& j, const std::string& source) { return config::from_json<ToyConfig>(j, source); }
};

// 2. What every architecture of the family shares: its config, initialisation and name map.
// Models with heads hold the base model under "toy."; the bare ToyModel has no prefix.
class ToyPreTrainedModel : public PretrainedModel {
 public:
  ToyPreTrainedModel(const ToyConfig& c, std::string prefix) : config(c), prefix_(std::move(prefix)) {}
  std::string model_type() const override { return ToyConfig::kModelType; }
  nlohmann::json family_config_json() const override { return config.to_json(); }
  void init_weights(Generator& gen) override { nn::init::bert_init(*this, config.initializer_range, gen); }
  // Encoder tensors under this model's prefix; a head's keep their names (is_head_tensor says so).
  std::string name_from_checkpoint(const std::string& file_name) const override {
    const std::string bare = strip_base_prefix(file_name);
    return is_encoder_name(bare) ? prefix_ + bare : file_name;
  }
  bool is_head_tensor(const std::string& name) const override { return !is_encoder_name(strip_base_prefix(name)); }

  ToyConfig config;

 private:
  static std::string strip_base_prefix(const std::string& n) { return n.rfind("toy.", 0) == 0 ? n.substr(4) : n; }
  static bool is_encoder_name(const std::string& n) { return n.rfind("embeddings.", 0) == 0 || n.rfind("layer.", 0) == 0; }
  std::string prefix_;  // "toy." or ""
};

// 3. The modules and the base model: last_hidden_state (B, T, H).
class ToyEmbeddings : public nn::Module {
 public:
  explicit ToyEmbeddings(const ToyConfig& c) {
    words = register_module("word_embeddings", std::make_shared<nn::Embedding>(c.vocab_size, c.hidden_size, c.pad_token_id));
    positions = register_module("position_embeddings", std::make_shared<nn::Embedding>(c.max_position_embeddings, c.hidden_size));
    types = register_module("token_type_embeddings", std::make_shared<nn::Embedding>(c.type_vocab_size, c.hidden_size));
    norm = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(c.hidden_size));
  }
  Tensor forward(const ModelInputs& in) {
    const size_t b = in.batch(), t = in.seq_len();
    std::vector<int64_t> pos(b * t);
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int64_t(i % t);
    Tensor x = add(words->forward(in.input_ids), positions->forward(pos, {b, t}));
    if (in.token_type_ids.defined()) x = add(x, types->forward(in.token_type_ids));
    return norm->forward(x);
  }
  std::shared_ptr<nn::Embedding> words, positions, types;
  std::shared_ptr<nn::LayerNorm> norm;
};

// x + GELU(dense(x)) at each position.
class ToyLayer : public nn::Module {
 public:
  explicit ToyLayer(const ToyConfig& c) { dense = register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size)); }
  Tensor forward(const Tensor& x) { return add(x, gelu(dense->forward(x))); }
  std::shared_ptr<nn::Linear> dense;
};

class ToyModel : public ToyPreTrainedModel {
 public:
  static constexpr const char* kArchitecture = "ToyModel";
  explicit ToyModel(const ToyConfig& c) : ToyPreTrainedModel(c, "") {
    embeddings = register_module("embeddings", std::make_shared<ToyEmbeddings>(c));
    layer = register_module("layer", std::make_shared<ToyLayer>(c));
  }
  std::string architecture() const override { return kArchitecture; }
  Tensor forward(const ModelInputs& in) {
    in.validate(config.input_limits());
    return layer->forward(embeddings->forward(in));
  }
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels) override {
    check_label_names(labels, {}, kArchitecture);
    return {{"last_hidden_state", forward(in)}};
  }

  std::shared_ptr<ToyEmbeddings> embeddings;
  std::shared_ptr<ToyLayer> layer;
};

// 4. The pre-training head: masked-LM only (no sentence task), through the shared MLM loss.
class ToyForMaskedLM : public ToyPreTrainedModel, public PretrainingHeads {
 public:
  static constexpr const char* kArchitecture = "ToyForMaskedLM";
  explicit ToyForMaskedLM(const ToyConfig& c) : ToyPreTrainedModel(c, "toy.") {
    toy = register_module("toy", std::make_shared<ToyModel>(c));
    lm_head = register_module("lm_head", std::make_shared<nn::Linear>(c.hidden_size, c.vocab_size));
  }
  std::string architecture() const override { return kArchitecture; }
  PretrainedModel& base_model() override { return *toy; }
  SentenceTask sentence_task() const override { return SentenceTask::None; }
  PretrainingOutput forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) override {
    check_pretraining_targets(in, t, SentenceTask::None, kArchitecture);
    PretrainingOutput out;
    masked_lm_loss(toy->forward(in), t.masked_positions.to_ints(), t, [&](const Tensor& h) { return lm_head->forward(h); }, out);
    return out;
  }
  void set_checkpoint_activations(bool on) override {
    if (on) throw std::invalid_argument("[ToyForMaskedLM] has no layers to checkpoint");
  }
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels) override {
    check_label_names(labels, {"labels"}, kArchitecture);
    NamedOutputs out{{"logits", lm_head->forward(toy->forward(in))}};
    if (labels.count("labels")) out["loss"] = token_labels_loss(out["logits"], labels.at("labels"));
    return out;
  }

  std::shared_ptr<ToyModel> toy;
  std::shared_ptr<nn::Linear> lm_head;
};

// 5. A task head: the shared sequence-classification outputs over the mean of the real tokens.
class ToyForSequenceClassification : public ToyPreTrainedModel {
 public:
  static constexpr const char* kArchitecture = "ToyForSequenceClassification";
  ToyForSequenceClassification(const ToyConfig& c, HeadConfig h) : ToyPreTrainedModel(c, "toy."), head(std::move(h)) {
    head.validate();
    toy = register_module("toy", std::make_shared<ToyModel>(c));
    classifier = register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, head.num_labels()));
  }
  std::string architecture() const override { return kArchitecture; }
  PretrainedModel& base_model() override { return *toy; }
  nlohmann::json family_config_json() const override {
    nlohmann::json j = config.to_json();
    head.add_to_json(j);
    return j;
  }
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels) override {
    const Tensor h = toy->forward(in);  // (B, T, H)
    const long b = long(in.batch()), t = long(in.seq_len());
    Tensor mask = in.attention_mask.defined() ? in.attention_mask : Tensor::ones({size_t(b), size_t(t)});
    mask = reshape(mask, {b, t, 1});
    const Tensor pooled = div(sum(mul(h, mask), {1}), sum(mask, {1}));  // (B, H)
    return sequence_classification_outputs(classifier->forward(pooled), labels, head, kArchitecture);
  }

  HeadConfig head;
  std::shared_ptr<ToyModel> toy;
  std::shared_ptr<nn::Linear> classifier;
};

// 6. The family's entry: its architectures (the bare model first), presets, pre-training heads,
// recipe and tokenizer. Registered once per process.
FamilyEntry toy_family() {
  FamilyEntry f;
  f.model_type = ToyConfig::kModelType;
  f.architectures = {architecture_entry<ToyModel, ToyConfig>(), architecture_entry<ToyForMaskedLM, ToyConfig>(),
                     head_architecture_entry<ToyForSequenceClassification, ToyConfig>()};
  f.preset = [](const std::string& size) { return ToyConfig::preset(size).to_json(); };
  f.pretraining = {{SentenceTask::None, ToyForMaskedLM::kArchitecture}};
  f.recipe.beta2 = 0.99f;  // a recipe of its own, to see the trainer take it
  f.tokenizer = {"BertTokenizer", VocabularyKind::WordPiece, ""};  // no bundled vocabulary: a run trains one
  return f;
}

void register_toy_family() {
  static const bool registered = (register_family(toy_family()), true);
  (void)registered;
}

}  // namespace

TEST_CASE("a family registered from outside pre-trains, fine-tunes, saves and reloads through the programs' code",
          "[registry][family][toy]") {
  register_toy_family();
  const std::string dir = temp_path("xgrad_toy_family");
  fs::remove_all(dir);

  // Pre-training: --model toy-tiny, a trained WordPiece vocabulary (the family's kind), its recipe.
  const PretrainRun pre = small_pretrain_run("toy-tiny", dir + "/pretrain", 40, 500, 32, 5e-3f);
  REQUIRE(pre.go() == 40);
  std::vector<double> losses;
  for (const auto& row : metrics_rows(pre.trainer.out))
    if (row.contains("loss")) losses.push_back(row["loss"]);
  REQUIRE(losses.size() == 40);
  CHECK(losses.back() < losses.front() - 0.5);  // it learns
  const fs::path ckpt = fs::path(pre.trainer.out) / "checkpoint-000040";
  const auto config = read_json(ckpt / "config.json");
  CHECK(config["model_type"] == "toy");
  CHECK(config["architectures"][0] == "ToyForMaskedLM");
  CHECK(config["vocab_size"] == 500);
  CHECK(fs::exists(ckpt / "vocab.txt"));
  CHECK(read_json(ckpt / "optimizer.json")["settings"]["beta2"].get<float>() == 0.99f);

  // Fine-tuning from that checkpoint: the family's *ForSequenceClassification, found by suffix.
  fs::create_directories(dir);
  training::FinetuneOptions o = test::tiny_finetune(dir, "", test::write_split(dir + "/train.tsv", 7, 0),
                                                    test::write_split(dir + "/dev.tsv", 10, 5), 48);
  o.model = ckpt.string();  // its tokenizer comes with it
  training::ClassificationKind kind;
  const nlohmann::json report = training::run_finetuning(test::quiet_trainer(dir + "/finetune", 6, 16, 1e-2f, 429), o, kind).scores;
  const double accuracy = report.at("dev").at("accuracy").get<double>();
  CHECK(accuracy > 0.6);  // a bag of trained embeddings: measured 0.67 against a 0.50 majority
  const std::string best = dir + "/finetune/best";
  CHECK(read_json(fs::path(best) / "config.json")["architectures"][0] == "ToyForSequenceClassification");
  CHECK(kind.score_file(best, o.dev, o, 64, "").at("accuracy") == Approx(accuracy));

  // Save and reload: the same logits, every tensor found under the family's names.
  auto loaded = load_pretrained(best);
  CHECK(loaded.notes.empty());
  const ModelInputs in = make_inputs(2, 5, {5, 6, 7, 8, 9, 10, 11, 12, 0, 0}, {}, {1, 1, 1, 1, 1, 1, 1, 1, 0, 0});
  const std::vector<float> before = loaded.model->forward_named(in).at("logits").to_vector();
  save_pretrained(*loaded.model, dir + "/again");
  CHECK(load_pretrained(dir + "/again").model->forward_named(in).at("logits").to_vector() == before);
  // its base model alone loads from the classifier's checkpoint, the head left out with a note
  auto base = load_pretrained(best, 0, "ToyModel");
  CHECK(base.model->architecture() == "ToyModel");
  CHECK(base.dropped.size() == 2);  // classifier.weight and classifier.bias
  fs::remove_all(dir);
}
