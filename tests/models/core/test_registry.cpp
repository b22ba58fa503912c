// The model registry: config.json -> the right class, checkpoints of every BERT architecture
// saved and loaded under Hugging Face's names (tests/data/hf_names.json, from
// tools/gen_hf_names.py with transformers), loading across architectures, and clear errors.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "models/bert/bert_heads.hpp"
#include "models/core/checkpoint.hpp"
#include "tests/golden.hpp"
#include "tests/temp_path.hpp"

using namespace xg;
using namespace xg::models;
using Catch::Matchers::Contains;

namespace {

const std::vector<std::string> kArchitectures = {"BertModel", "BertForPreTraining", "BertForMaskedLM"};

BertConfig small_config() {
  BertConfig c;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 32;
  c.max_position_embeddings = 12;
  c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0.f;
  return c;
}

nlohmann::json config_for(const std::string& architecture) {
  nlohmann::json j = small_config().to_json();
  j["architectures"] = {architecture};
  return j;
}

std::unique_ptr<PretrainedModel> initialised(const std::string& architecture, uint64_t seed = 7) {
  auto m = build_model(config_for(architecture), "test", architecture);
  Generator gen(seed);
  m->init_weights(gen);
  m->eval();
  return m;
}

ModelInputs two_rows() {
  return pad_sequences({{{2, 5, 7, 9, 3}, {0, 0, 0, 1, 1}}, {{2, 11, 3}, {}}}, /*pad_id=*/0);
}

// Per process: engineers' checkouts run these tests side by side on one machine.
std::string temp_dir(const std::string& name) {
  const auto d = std::filesystem::path(temp_path("xgrad_registry_" + name));
  std::filesystem::remove_all(d);
  return d.string();
}

std::vector<std::string> saved_names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& [n, _] : nn::safetensors::read(dir + "/model.safetensors").tensors) out.push_back(n);
  return out;
}

void check_same_outputs(PretrainedModel& a, PretrainedModel& b, const ModelInputs& in) {
  NoGradGuard no_grad;
  const NamedOutputs x = a.forward_named(in), y = b.forward_named(in);
  REQUIRE(x.size() == y.size());
  for (const auto& [name, t] : x) {
    INFO(name);
    REQUIRE(y.count(name));
    CHECK(t.to_vector() == y.at(name).to_vector());
  }
}

// A head defined outside the library, registered without touching loader code: BERT's pooled
// output -> 3 classes, under "classifier".
class TestBertForThreeClasses : public BertPreTrainedModel {
 public:
  static constexpr const char* kArchitecture = "TestBertForThreeClasses";
  explicit TestBertForThreeClasses(const BertConfig& c) : BertPreTrainedModel(c, "bert.") {
    bert = register_module("bert", std::make_shared<BertModel>(c));
    classifier = register_module("classifier", std::make_shared<nn::Linear>(c.hidden_size, 3));
  }
  std::string architecture() const override { return kArchitecture; }
  PretrainedModel& base_model() override { return *bert; }
  bool is_head_tensor(const std::string& name) const override {
    return name.rfind("classifier.", 0) == 0 || BertPreTrainedModel::is_head_tensor(name);
  }
  NamedOutputs forward_named(const ModelInputs& in, const Labels& labels) override {
    check_label_names(labels, {"labels"}, kArchitecture);
    NamedOutputs out{{"logits", classifier->forward(bert->forward(in).pooler_output)}};
    if (labels.count("labels")) out["loss"] = sequence_labels_loss(out["logits"], labels.at("labels"), "labels");
    return out;
  }
  std::shared_ptr<BertModel> bert;
  std::shared_ptr<nn::Linear> classifier;
};

}  // namespace

TEST_CASE("registry: config.json's model_type and architectures build the right class", "[registry]") {
  CHECK(registered_model_types() == std::vector<std::string>{"bert", "roberta", "albert", "electra"});
  const auto archs = registered_architectures("bert");
  for (const auto& a : kArchitectures) CHECK(std::find(archs.begin(), archs.end(), a) != archs.end());
  for (const auto& a : kArchitectures) {
    INFO(a);
    const auto m = build_model(config_for(a), "config.json");
    CHECK(m->architecture() == a);
    CHECK(m->model_type() == "bert");
    CHECK(m->config_json()["architectures"] == nlohmann::json{a});
  }
  CHECK(dynamic_cast<BertModel*>(build_model(config_for("BertModel"), "c").get()));
  CHECK(dynamic_cast<BertForPreTraining*>(build_model(config_for("BertForPreTraining"), "c").get()));
  auto mlm = build_model(config_for("BertForMaskedLM"), "c");
  REQUIRE(dynamic_cast<BertForMaskedLM*>(mlm.get()));
  CHECK(&mlm->base_model() == dynamic_cast<BertForMaskedLM&>(*mlm).bert.get());
  // as in transformers, BertForMaskedLM has no pooler
  for (const auto& [n, _] : mlm->named_parameters()) CHECK(n.find("pooler") == std::string::npos);
  // no "architectures": the bare encoder, as AutoModel gives; an explicit class wins over the file
  nlohmann::json bare = small_config().to_json();
  CHECK(build_model(bare, "c")->architecture() == "BertModel");
  bare["architectures"] = nullptr;  // transformers reads null as unset
  CHECK(build_model(bare, "c")->architecture() == "BertModel");
  CHECK(build_model(config_for("BertModel"), "c", "BertForMaskedLM")->architecture() == "BertForMaskedLM");
}

TEST_CASE("registry: unknown model_type or architecture errors list the registered ones", "[registry][errors]") {
  nlohmann::json j = config_for("BertModel");
  j["model_type"] = "gpt9";
  CHECK_THROWS_WITH(build_model(j, "dir/config.json"),
                    Contains("dir/config.json") && Contains("'gpt9'") && Contains("registered: bert"));
  j.erase("model_type");
  CHECK_THROWS_WITH(build_model(j, "dir/config.json"), Contains("no \"model_type\"") && Contains("registered: bert"));
  CHECK_THROWS_WITH(build_model(config_for("BertForNextSentencePrediction"), "dir/config.json"),
                    Contains("'BertForNextSentencePrediction'") &&
                        Contains("BertModel, BertForPreTraining, BertForMaskedLM, BertForSequenceClassification, "
                                 "BertForTokenClassification, BertForQuestionAnswering, BertForMultipleChoice"));
  nlohmann::json not_list = config_for("BertModel");
  not_list["architectures"] = "BertModel";
  CHECK_THROWS_WITH(build_model(not_list, "c.json"), Contains("\"architectures\" must be a list"));
  FamilyEntry taken;
  taken.model_type = "bert";
  CHECK_THROWS_WITH(register_family(taken), Contains("'bert' is already registered"));
  CHECK_THROWS_WITH(register_architecture("gpt9", architecture_entry<BertModel, BertConfig>()), Contains("'gpt9'"));
  CHECK_THROWS_WITH(register_architecture("bert", architecture_entry<BertModel, BertConfig>()),
                    Contains("'BertModel' is already registered"));
  // the family's config errors still name the file
  nlohmann::json bad = config_for("BertModel");
  bad["num_attention_heads"] = 5;
  CHECK_THROWS_WITH(build_model(bad, "dir/config.json"), Contains("num_attention_heads 5") && Contains("dir/config.json"));
}

TEST_CASE("registry: each family's entry carries what programs would otherwise switch on its name", "[registry]") {
  // Trainers and programs ask these; none of them names a family.
  const FamilyEntry bert = family_entry("bert"), roberta = family_entry("roberta"), albert = family_entry("albert");
  CHECK(bert.tokenizer.tokenizer_class == "BertTokenizer");
  CHECK(bert.tokenizer.vocabulary == VocabularyKind::WordPiece);
  CHECK(bert.tokenizer.default_vocabulary == "data/bert-base-uncased-vocab.txt");
  CHECK(roberta.tokenizer.tokenizer_class == "RobertaTokenizer");
  CHECK(roberta.tokenizer.vocabulary == VocabularyKind::ByteLevelBpe);
  CHECK(roberta.tokenizer.default_vocabulary.empty());  // a run trains one
  CHECK(albert.tokenizer.tokenizer_class == "AlbertTokenizer");
  CHECK(albert.tokenizer.vocabulary == VocabularyKind::SentencePiece);
  // the papers' recipes: BERT's defaults, RoBERTa's Adam beta2 and eps, ALBERT's LAMB and n-grams
  CHECK(bert.recipe.max_ngram == 1);
  CHECK(!bert.recipe.optimizer);
  CHECK(!bert.recipe.beta2);
  CHECK(roberta.recipe.beta2 == 0.98f);
  CHECK(roberta.recipe.eps == 1e-6f);
  CHECK(albert.recipe.max_ngram == 3);
  CHECK(albert.recipe.optimizer == std::string("lamb"));
  // ELECTRA's masking: [MASK] or the token itself, no random token (its generator makes those)
  const FamilyEntry electra = family_entry("electra");
  CHECK(electra.recipe.mask_token_rate == 0.85f);
  CHECK(electra.recipe.random_token_rate == 0.f);
  CHECK(bert.recipe.mask_token_rate == 0.8f);
  CHECK(bert.recipe.random_token_rate == 0.1f);
  CHECK(electra.tokenizer.tokenizer_class == "BertTokenizer");
  CHECK(default_model_type() == "bert");
  CHECK(config_model_type({{"model_type", "albert"}}) == "albert");
  CHECK(config_model_type({{"vocab_size", 5}}) == "bert");  // this project's configs before families
  CHECK(config_model_type({{"model_type", 3}}) == "bert");
  // positions: RoBERTa's follow padding, from pad_token_id + 1
  CHECK(!bert.positions_follow_padding);
  CHECK(roberta.positions_follow_padding);
  CHECK(first_position({{"model_type", "roberta"}, {"pad_token_id", 1}}) == 2);
  CHECK(first_position({{"model_type", "roberta"}, {"pad_token_id", 0}}) == 1);
  CHECK(first_position({{"model_type", "bert"}, {"pad_token_id", 5}}) == 0);
  CHECK(first_position({{"model_type", "albert"}, {"pad_token_id", 0}}) == 0);
  CHECK(first_position({{"pad_token_id", 1}}) == 0);  // no model_type: the default family's
  CHECK(first_position(family_entry("roberta").preset("tiny")) == 2);
  CHECK_THROWS_WITH(first_position({{"model_type", "roberta"}}), Contains("'roberta'") && Contains("pad_token_id"));
  CHECK_THROWS_WITH(first_position({{"model_type", "roberta"}, {"pad_token_id", -1}}), Contains("-1"));
  CHECK_THROWS_WITH(family_entry("gpt2"), Contains("'gpt2'") && Contains("bert, roberta, albert, electra"));
}

TEST_CASE("registry: every architecture saves and reloads with identical outputs", "[registry]") {
  const ModelInputs in = two_rows();
  for (const auto& a : kArchitectures) {
    INFO(a);
    const std::string dir = temp_dir(a);
    auto model = initialised(a);
    save_pretrained(*model, dir);
    const auto cfg = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
    CHECK(cfg.at("architectures") == nlohmann::json{a});
    CHECK(cfg.at("model_type") == "bert");
    CHECK(cfg.at("hidden_size") == 16);
    LoadedModel loaded = load_pretrained(dir);
    CHECK(loaded.model->architecture() == a);
    CHECK(loaded.notes.empty());
    CHECK_FALSE(loaded.model->is_training());  // eval mode, as from_pretrained returns a model
    check_same_outputs(*model, *loaded.model, in);
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("registry: saved tensor names are those transformers saves, for each architecture", "[registry][hf]") {
  const auto golden = nlohmann::json::parse(std::ifstream(std::string(XGRAD_TEST_DATA_DIR) + "/hf_names.json"));
  const BertConfig c = BertConfig::from_json(golden.at("config"), "hf_names.json");
  for (const auto& a : kArchitectures) {
    INFO(a);
    const auto& expected = golden.at("architectures").at(a);
    auto model = build_model(c.to_json(), "hf_names.json", a);
    Generator gen(1);
    model->init_weights(gen);
    const std::string dir = temp_dir("names_" + a);
    save_pretrained(*model, dir);
    const auto saved = saved_names(dir);
    CHECK(std::set<std::string>(saved.begin(), saved.end()) ==
          expected.at("saved").get<std::set<std::string>>());
    // every name in transformers' state_dict (tied copies, buffers) maps to one of ours or is skipped
    std::set<std::string> ours;
    for (const auto& [n, _] : model->named_parameters()) ours.insert(n);
    for (const std::string n : expected.at("state_dict")) {
      INFO(n);
      const std::string mapped = model->name_from_checkpoint(n);
      CHECK((mapped.empty() || ours.count(mapped)));
    }
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("registry: a checkpoint loads into another architecture of its family, with notes", "[registry]") {
  const ModelInputs in = two_rows();
  const std::string pre_dir = temp_dir("pre"), mlm_dir = temp_dir("mlm");
  auto pre = initialised("BertForPreTraining");
  save_pretrained(*pre, pre_dir);
  // pre-training -> masked LM: the NSP head and the pooler are ignored, the logits are the same
  Loaded<BertForMaskedLM> mlm = load_pretrained_as<BertForMaskedLM>(pre_dir);
  REQUIRE(mlm.notes.size() == 1);
  CHECK_THAT(mlm.notes[0], Contains("4 head tensors") && Contains("ignored"));
  mlm.model->eval();
  {
    NoGradGuard no_grad;
    CHECK(mlm.model->forward(in).to_vector() == pre->forward_named(in).at("prediction_logits").to_vector());
  }
  // masked LM -> pre-training: the pooler and NSP head are initialised randomly
  save_pretrained(*mlm.model, mlm_dir);
  Loaded<BertForPreTraining> back = load_pretrained_as<BertForPreTraining>(mlm_dir, 3);
  REQUIRE(back.notes.size() == 1);
  CHECK_THAT(back.notes[0], Contains("4 head tensors of BertForPreTraining") && Contains("initialised randomly"));
  // pre-training -> bare encoder (names without "bert.")
  Loaded<BertModel> bare = load_pretrained_as<BertModel>(pre_dir);
  bare.model->eval();
  {
    NoGradGuard no_grad;
    CHECK(bare.model->forward(in).pooler_output.to_vector() == pre->forward_named(in).at("pooler_output").to_vector());
  }
  CHECK(&bare.model->base_model() == bare.model.get());
  CHECK(bare.file_names.at("embeddings.word_embeddings.weight") == "bert.embeddings.word_embeddings.weight");
  // asking for one class and getting another is an error naming both
  CHECK_THROWS_WITH(Loaded<BertForPreTraining>(load_pretrained(mlm_dir)), Contains("holds a BertForMaskedLM, not a BertForPreTraining"));
  std::filesystem::remove_all(pre_dir);
  std::filesystem::remove_all(mlm_dir);
}

TEST_CASE("registry: a head registered outside the library loads and saves through the same code", "[registry]") {
  static const bool registered = [] {
    register_architecture("bert", architecture_entry<TestBertForThreeClasses, BertConfig>());
    return true;
  }();
  CHECK(registered);
  const std::string base_dir = temp_dir("head_base"), head_dir = temp_dir("head");
  auto pre = initialised("BertForPreTraining");
  save_pretrained(*pre, base_dir);
  // fine-tuning starts from a pre-trained encoder: the classifier is new, the MLM/NSP heads unused
  LoadedModel head = load_pretrained(base_dir, 5, "TestBertForThreeClasses");
  CHECK(head.model->architecture() == "TestBertForThreeClasses");
  CHECK(head.notes.size() == 2);
  head.model->eval();
  const ModelInputs in = two_rows();
  const NamedOutputs out = head.model->forward_named(in, {{"labels", test::ints({0, 2})}});
  CHECK(out.at("logits").shape() == Shape{2, 3});
  CHECK(std::isfinite(out.at("loss").item()));
  save_pretrained(*head.model, head_dir);
  LoadedModel again = load_pretrained(head_dir);
  CHECK(again.model->architecture() == "TestBertForThreeClasses");
  CHECK(again.notes.empty());
  again.model->eval();
  check_same_outputs(*head.model, *again.model, in);
  std::filesystem::remove_all(base_dir);
  std::filesystem::remove_all(head_dir);
}

TEST_CASE("forward_named: Hugging Face's outputs and losses, label errors", "[registry][errors]") {
  const ModelInputs in = two_rows();
  auto pre = initialised("BertForPreTraining");
  std::vector<int64_t> labels(in.batch() * in.seq_len(), -100);
  labels[1] = 5;
  labels[7] = 9;
  const NamedOutputs out = pre->forward_named(in, {{"labels", test::ints(labels, in.input_ids.shape())}, {"next_sentence_label", test::ints({0, 1})}});
  // the same loss as the sparse pre-training forward over the masked positions
  const auto sparse = dynamic_cast<BertForPreTraining&>(*pre).forward(in, make_pretraining_targets({1, 7}, {5, 9}, {0, 1}));
  CHECK(out.at("loss").item() == Approx(sparse.loss.item()).epsilon(1e-6));
  CHECK(out.at("mlm_loss").item() == Approx(sparse.mlm_loss.item()).epsilon(1e-6));
  CHECK_THROWS_WITH(pre->forward_named(in, {{"labels", test::ints(labels)}}), Contains("both labels and next_sentence_label"));
  CHECK_THROWS_WITH(pre->forward_named(in, {{"start_positions", test::ints({1})}}),
                    Contains("unknown label 'start_positions'") && Contains("labels, next_sentence_label"));
  CHECK_THROWS_WITH(initialised("BertModel")->forward_named(in, {{"labels", test::ints(labels)}}), Contains("takes: none"));
  auto mlm = initialised("BertForMaskedLM");
  CHECK_THROWS_WITH(mlm->forward_named(in, {{"labels", test::ints({1, 2, 3})}}), Contains("3 token labels for 10 positions"));
  const NamedOutputs mlm_out = mlm->forward_named(in, {{"labels", test::ints(labels)}});
  CHECK(mlm_out.at("logits").shape() == Shape{2, 5, 40});
  CHECK(std::isfinite(mlm_out.at("loss").item()));
}

TEST_CASE("bert_infer dump runs any architecture's forward: outputs, loss and gradients by name", "[registry][cli]") {
  const std::string dir = temp_dir("dump_mlm"), inputs = dir + "_in.safetensors", out = dir + "_out.safetensors";
  auto mlm = initialised("BertForMaskedLM");
  save_pretrained(*mlm, dir);
  const ModelInputs in = two_rows();
  std::vector<int64_t> labels(in.batch() * in.seq_len(), -100), mask;
  labels[2] = 7;
  for (float m : in.attention_mask.to_vector()) mask.push_back(int64_t(m));
  const Shape bt = in.input_ids.shape();
  nn::safetensors::write(inputs, {},
                         {{"input_ids", {bt, in.input_ids.to_ints()}}, {"token_type_ids", {bt, in.token_type_ids.to_ints()}},
                          {"attention_mask", {bt, mask}}, {"labels", {bt, labels}}},
                         {});
  const std::string cmd = std::string(XGRAD_BERT_INFER) + " dump --model " + dir + " --inputs " + inputs + " --out " + out;
  REQUIRE(std::system((cmd + " --grads 2>/dev/null").c_str()) == 0);
  const auto dumped = nn::safetensors::read(out);
  auto f = [&](const std::string& n) { return nn::safetensors::to_float(dumped.tensors.at(n), n); };
  const NamedOutputs expected = mlm->forward_named(in, {{"labels", test::ints(labels)}});
  for (const char* k : {"logits", "last_hidden_state", "loss"}) {
    INFO(k);
    CHECK(test::max_scaled_error(f(k), expected.at(k)) < 1e-6);
  }
  size_t grads = 0;
  for (const auto& [name, _] : dumped.tensors) grads += name.rfind("grad.", 0) == 0;
  CHECK(grads == mlm->named_parameters().size());
  CHECK(dumped.tensors.count("grad.cls.predictions.bias"));
  // a label the model does not take is refused
  nn::safetensors::write(inputs, {}, {{"input_ids", {bt, in.input_ids.to_ints()}}, {"next_sentence_label", {{in.batch()}, {0, 1}}}}, {});
  CHECK(std::system((cmd + " 2>/dev/null").c_str()) != 0);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(inputs);
  std::filesystem::remove(out);
}
