// BertForPreTraining against PyTorch (tools/gen_bert_goldens.py, Hugging Face names): outputs,
// losses and every parameter gradient; HF checkpoint directories in and out; config validation.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "models/bert/bert_heads.hpp"
#include "models/core/checkpoint.hpp"
#include "nn/fused_encoder.hpp"
#include "tests/golden.hpp"
#include "text/bert_tokenizer.hpp"
#include "tests/temp_path.hpp"

using namespace xg;
using namespace xg::models;
using xg::test::max_scaled_error;
using xg::test::max_scaled_error_real;
using Catch::Matchers::Contains;

namespace {
std::string dir_of(const std::string& name) { return std::string(XGRAD_TEST_DATA_DIR) + "/bert_" + name; }

struct Case {
  nn::safetensors::File file;
  BertInputs inputs;
  PretrainingTargets targets;
  Tensor f(const std::string& n) const { return nn::safetensors::to_float(file.tensors.at(n), n); }
  std::vector<int64_t> i(const std::string& n) const { return nn::safetensors::to_int64(file.tensors.at(n), n); }
};

Case load_case(const std::string& name) {
  Case c;
  c.file = nn::safetensors::read(dir_of(name) + "/goldens.safetensors");
  const auto& ids = c.file.tensors.at("input_ids");
  c.inputs = make_inputs(ids.shape[0], ids.shape[1], c.i("input_ids"), c.i("token_type_ids"), c.i("attention_mask"));
  const auto labels = c.i("labels"), sentence = c.i("next_sentence_label");
  c.targets = test::pretraining_targets(Tensor::from_ints(labels, {labels.size()}), Tensor::from_ints(sentence, {sentence.size()}));
  return c;
}
}  // namespace

TEST_CASE("BERT matches PyTorch: outputs, losses and all gradients", "[bert][parity]") {
  for (const std::string name : {"a", "b"}) {  // b: F16 weights, bare BertModel names, gamma/beta
    INFO("model " << name);
    const Case c = load_case(name);
    Loaded<BertForPreTraining> loaded = load_pretrained(dir_of(name));
    BertForPreTraining& m = *loaded.model;
    m.eval();
    CHECK(loaded.notes.empty());
    for (const bool fused : {false, true}) {  // the recorded forward, then the inference path
      INFO("fused inference " << fused);
      nn::ExecutionOptions exec;
      exec.fused_inference = fused;
      m.set_execution(exec);
      NoGradGuard no_grad;
      const auto full = m.forward_full(c.inputs);
      // the recorded path at every position (padding too, as transformers computes it); the fused
      // one at real positions (it leaves padding zero)
      const Tensor real = fused ? c.inputs.attention_mask : Tensor();
      const double e1 = max_scaled_error_real(full.base.last_hidden_state, c.f("last_hidden_state"), real);
      const double e2 = max_scaled_error(full.base.pooler_output, c.f("pooler_output"));
      const double e3 = max_scaled_error_real(full.prediction_logits, c.f("prediction_logits"), real);
      const double e4 = max_scaled_error(full.seq_relationship_logits, c.f("seq_relationship_logits"));
      CHECK(e1 < 1e-4);
      CHECK(e2 < 1e-4);
      CHECK(e3 < 1e-4);
      CHECK(e4 < 1e-4);
      std::printf("parity bert_%s outputs (%s): hidden %.1e pooled %.1e mlm logits %.1e nsp logits %.1e\n", name.c_str(),
                  fused ? "fused" : "recorded", e1, e2, e3, e4);
    }
    const auto out = m.forward(c.inputs, c.targets);
    CHECK(out.loss.item() == Approx(c.f("loss").item()).epsilon(1e-5));
    CHECK(out.mlm_loss.item() == Approx(c.f("mlm_loss").item()).epsilon(1e-5));
    CHECK(out.sentence_loss.item() == Approx(c.f("nsp_loss").item()).epsilon(1e-5));
    out.loss.backward();
    double worst = 0;
    size_t checked = 0;
    for (auto& [n, p] : m.named_parameters()) {
      INFO(n);
      REQUIRE(p.grad().defined());
      const double e = max_scaled_error(p.grad(), c.f("grad." + n), test::kGradientFloor);
      CHECK(e < 1e-3);
      worst = std::max(worst, e);
      ++checked;
    }
    CHECK(checked == c.file.tensors.size() - 12);  // every gradient the generator wrote
    std::printf("parity bert_%s losses %.6f/%.6f, %zu parameter gradients, max error %.1e\n", name.c_str(),
                out.loss.item(), c.f("loss").item(), checked, worst);
  }
}

TEST_CASE("checkpoints: save_pretrained writes HF names, reloads identically, replaces atomically", "[bert]") {
  const std::string dir = temp_path("xgrad_bert_ckpt");
  std::filesystem::remove_all(dir);
  Loaded<BertForPreTraining> a = load_pretrained(dir_of("a"));
  save_pretrained(*a.model, dir);
  const auto saved = nn::safetensors::read(dir + "/model.safetensors");
  const auto original = nn::safetensors::read(dir_of("a") + "/model.safetensors");
  std::vector<std::string> names_saved, names_original;
  for (auto& [n, _] : saved.tensors) names_saved.push_back(n);
  for (auto& [n, _] : original.tensors) names_original.push_back(n);
  CHECK(names_saved == names_original);
  CHECK(saved.tensors.count("bert.embeddings.word_embeddings.weight"));
  CHECK(saved.tensors.count("cls.predictions.bias"));
  CHECK(saved.tensors.count("cls.seq_relationship.weight"));
  Loaded<BertForPreTraining> b = load_pretrained(dir);
  const Case c = load_case("a");
  a.model->eval();
  b.model->eval();
  NoGradGuard no_grad;
  CHECK(a.model->forward_full(c.inputs).prediction_logits.to_vector() ==
        b.model->forward_full(c.inputs).prediction_logits.to_vector());
  // saving again replaces the directory whole; no temporary directories are left behind
  save_pretrained(*b.model, dir);
  for (auto& e : std::filesystem::directory_iterator(test_temp_dir()))
    CHECK(e.path().filename().string().find("xgrad_bert_ckpt.") == std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoints: a sharded checkpoint (an index and its shards) loads as the whole one", "[bert]") {
  namespace fs = std::filesystem;
  const fs::path dir = temp_path("xgrad_bert_sharded");
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(dir_of("a") + "/config.json", dir / "config.json");
  // the whole file's tensors in two shards, as transformers' save_pretrained(max_shard_size=...) writes them
  const nn::StateDict whole = nn::safetensors::read_float_tensors(dir_of("a") + "/model.safetensors");
  nn::StateDict first, second;
  nlohmann::json weight_map = nlohmann::json::object();
  size_t i = 0;
  for (const auto& [name, t] : whole) {
    const bool in_first = i++ % 2 == 0;
    (in_first ? first : second)[name] = t;
    weight_map[name] = in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  nn::safetensors::write((dir / "model-00001-of-00002.safetensors").string(), first);
  nn::safetensors::write((dir / "model-00002-of-00002.safetensors").string(), second);
  std::ofstream(dir / "model.safetensors.index.json") << nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}}.dump(2);
  Loaded<BertForPreTraining> a = load_pretrained(dir_of("a")), b = load_pretrained(dir.string());
  CHECK(b.notes.empty());
  const Case c = load_case("a");
  NoGradGuard no_grad;
  CHECK(a.model->forward_full(c.inputs).prediction_logits.to_vector() == b.model->forward_full(c.inputs).prediction_logits.to_vector());
  fs::remove(dir / "model-00002-of-00002.safetensors");
  CHECK_THROWS_WITH(load_pretrained(dir.string()), Contains("model.safetensors.index.json") && Contains("is missing"));
  fs::remove_all(dir);
}

TEST_CASE("bad configs and checkpoints give clear errors", "[bert][errors]") {
  BertConfig c = BertConfig::preset("tiny");
  CHECK(c.num_hidden_layers == 2);
  CHECK(c.intermediate_size == 512);
  CHECK_THROWS_WITH(BertConfig::preset("huge"), Contains("'huge'"));
  c.num_attention_heads = 3;
  CHECK_THROWS_WITH(c.validate(), Contains("hidden_size 128") && Contains("num_attention_heads 3"));
  CHECK_THROWS_WITH(BertConfig::from_json({{"hidden_size", -5}}, "x.json"), Contains("hidden_size") && Contains("x.json"));
  CHECK_THROWS_WITH(BertConfig::from_json({{"hidden_act", "swish"}}, "y.json"), Contains("'swish'"));
  // sizes a corrupt config could hold: refused before any tensor (whose byte count would wrap) is made
  CHECK_THROWS_WITH(BertConfig::from_json({{"vocab_size", uint64_t(1) << 56}}, "z.json"),
                    Contains("vocab_size is 72057594037927936: more than 16777216"));
  CHECK_THROWS_WITH(HeadConfig::with_num_labels(size_t(1) << 40), Contains("num_labels is 1099511627776"));
  CHECK_THROWS_WITH(Tensor::zeros({size_t(1) << 40, size_t(1) << 40}), Contains("more elements than memory can hold"));
  CHECK(shape_numel({size_t(1) << 40, size_t(1) << 40, 0}) == 0);
  CHECK_THROWS_WITH(load_pretrained("/nonexistent_dir"), Contains("not a directory"));
  // a checkpoint with the wrong shape for one tensor
  const std::string dir = temp_path("xgrad_bert_bad");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(dir_of("a") + "/config.json", dir + "/config.json");
  auto weights = nn::safetensors::read_float_tensors(dir_of("a") + "/model.safetensors");
  weights["bert.pooler.dense.bias"] = Tensor::zeros({7});
  weights.erase("bert.encoder.layer.1.output.dense.weight");
  nn::safetensors::write(dir + "/model.safetensors", weights);
  CHECK_THROWS_WITH(load_pretrained(dir), Contains("bert.pooler.dense.bias") &&
                                              Contains("bert.encoder.layer.1.output.dense.weight") && Contains("model.safetensors"));
  // an untied decoder: refused, not loaded with the word embeddings in its place
  std::filesystem::copy_file(dir_of("a") + "/model.safetensors", dir + "/model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  nlohmann::json untied = nlohmann::json::parse(std::ifstream(dir_of("a") + "/config.json"));
  untied["tie_word_embeddings"] = false;
  std::ofstream(dir + "/config.json") << untied.dump();
  CHECK_THROWS_WITH(load_pretrained(dir), Contains("tie_word_embeddings is false") && Contains(dir + "/config.json"));
  CHECK_NOTHROW(models::load_pretrained(dir, 0, "BertForSequenceClassification"));  // no decoder: nothing dropped
  std::filesystem::remove_all(dir);
  // inputs outside the model's ranges
  Loaded<BertForPreTraining> m = load_pretrained(dir_of("a"));
  BertInputs in;
  in.input_ids = test::ints({5, 500}, {1, 2});
  CHECK_THROWS_WITH(m.model->forward_full(in), Contains("input id 500"));
  in.input_ids = test::ints({5});
  CHECK_THROWS_WITH(m.model->forward_full(in), Contains("input_ids must be a non-empty (batch, length) tensor, got [1]"));
  in.input_ids = test::ints({5, 6}, {1, 2});
  in.token_type_ids = test::ints({0});
  CHECK_THROWS_WITH(m.model->forward_full(in), Contains("token_type_ids has shape [1], expected [1, 2]"));
  in.token_type_ids = Tensor::zeros({1, 2});
  CHECK_THROWS_WITH(m.model->forward_full(in), Contains("token_type_ids is float32, expected int64"));
}

TEST_CASE("bert_infer dump: outputs, losses and gradients under the checkpoint's own names", "[bert][cli]") {
  const std::string out = temp_path("xgrad_dump.safetensors");
  const std::string cmd = std::string(XGRAD_BERT_INFER) + " dump --model " + dir_of("b") + " --inputs " + dir_of("b") +
                          "/goldens.safetensors --out " + out + " --grads 2>/dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const Case c = load_case("b");
  const auto dumped = nn::safetensors::read(out);
  auto f = [&](const std::string& n) { return nn::safetensors::to_float(dumped.tensors.at(n), n); };
  for (const char* k : {"last_hidden_state", "pooler_output", "prediction_logits", "seq_relationship_logits"})
    CHECK(max_scaled_error(f(k), c.f(k)) < 1e-4);
  CHECK(f("loss").item() == Approx(c.f("loss").item()).epsilon(1e-5));
  CHECK(f("mlm_loss").item() == Approx(c.f("mlm_loss").item()).epsilon(1e-5));
  size_t grads = 0;
  for (const auto& [name, e] : dumped.tensors) {
    if (name.rfind("grad.", 0) != 0) continue;
    const std::string file_name = name.substr(5);
    CHECK(file_name.rfind("bert.", 0) != 0);  // the checkpoint's bare names, as written
    INFO(file_name);
    CHECK(max_scaled_error(f(name), c.f("grad." + canonical_bert_name(file_name)), test::kGradientFloor) < 1e-3);
    ++grads;
  }
  CHECK(grads == 62);
  // errors name the file and the problem
  const std::string bad = std::string(XGRAD_BERT_INFER) + " dump --model " + dir_of("b") + " --inputs /nonexistent.safetensors --out " + out + " 2>/dev/null";
  CHECK(std::system(bad.c_str()) != 0);
  // token ids stored as floats are named, not dropped
  const std::string float_ids = temp_path("xgrad_float_ids.safetensors"), said = temp_path("xgrad_float_ids.txt");
  nn::safetensors::write(float_ids, {{"input_ids", Tensor::from_vector({2, 3}, {1, 2})}});
  const std::string f32 = std::string(XGRAD_BERT_INFER) + " dump --model " + dir_of("b") + " --inputs " + float_ids + " --out " + out +
                          " 2> " + said;
  CHECK(std::system(f32.c_str()) != 0);
  std::ifstream said_in(said);
  const std::string message((std::istreambuf_iterator<char>(said_in)), std::istreambuf_iterator<char>());
  CHECK_THAT(message, Contains("input_ids is F32; model inputs are integers"));
  std::filesystem::remove(float_ids);
  std::filesystem::remove(said);
  std::filesystem::remove(out);
}

namespace {
struct Run {
  int code;
  std::string out, err;
};
// Runs bert_infer with `args`, capturing its exit code, stdout and stderr.
Run bert_infer(const std::string& args) {
  const auto tmp = test_temp_dir();
  const std::string out = (tmp / "xgrad_cli_out.txt").string(), err = (tmp / "xgrad_cli_err.txt").string();
  const int status = std::system((std::string(XGRAD_BERT_INFER) + " " + args + " > " + out + " 2> " + err).c_str());
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  Run r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}
}  // namespace

TEST_CASE("bert_infer command line: subcommands, unknown flags and bad numbers refused", "[bert][cli]") {
  const std::string model = " --model " + dir_of("b");
  Run r = bert_infer("fill-mask" + model + " --text x --top-k -1");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("bert_infer: --top-k: '-1': must be a whole number >= 0"));
  r = bert_infer("fill-mask" + model + " --text x --top-k 0");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--top-k"));
  r = bert_infer("embed" + model + " --batch 1e99");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--batch-size: '1e99'"));
  r = bert_infer("embed" + model + " --pooling max");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--pooling"));
  r = bert_infer("embed" + model + " --bogus");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("bert_infer: unknown flag --bogus"));
  r = bert_infer("tokenize");
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Contains("tokenize needs --model DIR or --tokenizer FILE"));
  r = bert_infer("");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("subcommand"));
  r = bert_infer("--help");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Contains("dump") && Contains("tokenize") && Contains("fill-mask") && Contains("embed"));
  r = bert_infer("embed --help");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Contains("=32") && Contains("=cls"));
}

TEST_CASE("bert_infer --model DIR uses the checkpoint's tokenizer files, --vocab overrides them", "[bert][cli]") {
  namespace fs = std::filesystem;
  const fs::path dir = temp_path("xgrad_infer_tokenizer");
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(dir_of("a") + "/" + f, dir / f);
  // a cased vocabulary of the checkpoint's 99 tokens, where "Hello" and "hello" differ
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "Hello", "world"};
  while (tokens.size() < 99) tokens.push_back("w" + std::to_string(tokens.size()));
  text::TokenizerOptions cased;
  cased.lowercase = false;
  text::BertTokenizer(text::Vocab(tokens), cased).save_pretrained(dir.string());
  const std::string in = (dir / "in.txt").string(), out = (dir / "out.txt").string(), err = (dir / "err.txt").string();
  std::ofstream(in) << "Hello world\n";
  auto run = [&](const std::string& args) {
    const std::string cmd = std::string(XGRAD_BERT_INFER) + " " + args + " < " + in + " > " + out + " 2> " + err;
    const int rc = std::system(cmd.c_str());
    std::ifstream o(out), e(err);
    return std::make_tuple(rc, std::string(std::istreambuf_iterator<char>(o), {}), std::string(std::istreambuf_iterator<char>(e), {}));
  };
  auto [rc, text, errors] = run("tokenize --model " + dir.string());
  CHECK(rc == 0);
  CHECK(text == "2 6 7 3\n");  // [CLS] Hello world [SEP]: cased, as tokenizer_config.json says
  std::tie(rc, text, errors) = run("tokenize --model " + dir.string() + " --vocab " + (dir / "vocab.txt").string());
  CHECK(text == "2 5 7 3\n");  // the --vocab override is uncased unless --cased
  std::tie(rc, text, errors) = run("fill-mask --model " + dir.string() + " --text \"Hello [MASK] world\" --top-k 2");
  CHECK(rc == 0);
  CHECK_THAT(text, Contains("[MASK] at token 2"));
  // every line-reading subcommand takes stdin's lines or one --text: fill-mask reads stdin too
  std::ofstream(in) << "Hello [MASK] world\nworld [MASK]\n";
  std::tie(rc, text, errors) = run("fill-mask --model " + dir.string() + " --top-k 2");
  CHECK(rc == 0);
  CHECK_THAT(text, Contains("[MASK] at token 2:") && Contains("\n\n[MASK] at token 2:"));  // one block per line
  std::tie(rc, text, errors) = run("tokenize --model " + dir.string() + " --text \"Hello world\"");
  CHECK(text == "2 6 7 3\n");  // --text instead of stdin's two lines
  std::ofstream(in) << "Hello [MASK]\nno mask here\n";
  std::tie(rc, text, errors) = run("fill-mask --model " + dir.string());
  CHECK(rc != 0);
  CHECK_THAT(errors, Contains("bert_infer: stdin line 2:") && Contains("[MASK]"));  // the line is named
  std::tie(rc, text, errors) = run("fill-mask --model " + dir.string() + " --text \"no mask\"");
  CHECK_THAT(errors, Contains("bert_infer: --text:"));
  std::ofstream(in) << "Hello world\n";
  std::tie(rc, text, errors) = run("fill-mask --model " + dir.string() + " --text x --cased");
  CHECK(rc != 0);
  CHECK_THAT(errors, Contains("--cased applies to --tokenizer"));
  // a directory from before tokenizer files (vocab.txt, config.json): BERT's defaults, uncased
  fs::remove(dir / "tokenizer_config.json");
  fs::remove(dir / "special_tokens_map.json");
  std::tie(rc, text, errors) = run("tokenize --model " + dir.string());
  CHECK(text == "2 5 7 3\n");
  fs::remove_all(dir);
}

TEST_CASE("bert_infer classify equals transformers on sentences and pairs, batched", "[bert][cli]") {
  namespace fs = std::filesystem;
  const std::string heads = std::string(XGRAD_TEST_DATA_DIR) + "/heads/";
  const auto goldens = nlohmann::json::parse(std::ifstream(heads + "classify_goldens.json"));
  const fs::path dir = temp_path("xgrad_classify");
  fs::create_directories(dir);
  const std::string lines = (dir / "in.txt").string(), jsonl = (dir / "in.jsonl").string();
  {
    std::ofstream l(lines), j(jsonl);
    for (const auto& input : goldens.at("inputs")) {
      l << input[0].get<std::string>() << (input.size() > 1 ? "\t" + input[1].get<std::string>() : "") << "\n";
      nlohmann::json o = {{"text", input[0]}};
      if (input.size() > 1) o["text_b"] = input[1];
      j << o.dump() << "\n";
    }
  }
  const std::string vocab = " --vocab " + heads + "classify_vocab.txt --batch 2";  // batches of 2, then 1
  for (const char* model : {"seq_single", "seq_multi", "seq_regression"}) {
    INFO(model);
    const auto& expected = goldens.at(model);
    const Run r = bert_infer("classify --model " + heads + model + vocab + " --top-k 3 < " + lines);
    REQUIRE(r.code == 0);
    std::istringstream out(r.out);
    std::string row;
    for (const auto& probabilities : expected.at("outputs")) {
      REQUIRE(std::getline(out, row));
      std::vector<std::string> fields;
      for (size_t start = 0, tab;; start = tab + 1) {
        tab = row.find('\t', start);
        fields.push_back(row.substr(start, tab - start));
        if (tab == std::string::npos) break;
      }
      if (std::string(model) == "seq_regression") {  // the value itself
        REQUIRE(fields.size() == 1);
        CHECK(std::stod(fields[0]) == Approx(probabilities[0].get<double>()).margin(1e-5));
        continue;
      }
      REQUIRE(fields.size() == 6);  // label, probability: all three, most likely first
      for (size_t k = 0; k < 3; ++k) {
        const auto& names = expected.at("id2label");
        const size_t id = size_t(std::find(names.begin(), names.end(), fields[2 * k]) - names.begin());
        REQUIRE(id < 3);
        CHECK(std::stod(fields[2 * k + 1]) == Approx(probabilities[id].get<double>()).margin(1e-5));
        if (k > 0) CHECK(std::stod(fields[2 * k + 1]) <= std::stod(fields[2 * k - 1]));
      }
    }
    CHECK(!std::getline(out, row));
  }
  // JSON Lines give the same; the default prints the most likely label only
  const Run from_lines = bert_infer("classify --model " + heads + "seq_single" + vocab + " < " + lines);
  const Run from_jsonl = bert_infer("classify --jsonl --model " + heads + "seq_single" + vocab + " < " + jsonl);
  CHECK(from_jsonl.code == 0);
  CHECK(from_jsonl.out == from_lines.out);
  CHECK(from_lines.out.rfind("negative\t0.47397", 0) == 0);
  // errors name the line; a model without a classifier is refused
  std::ofstream(jsonl, std::ios::app) << "{\"txt\": \"x\"}\n";
  const Run bad = bert_infer("classify --jsonl --model " + heads + "seq_single" + vocab + " < " + jsonl);
  CHECK(bad.code == 1);
  CHECK_THAT(bad.err, Contains("stdin line 6: expected {\"text\": \"...\"}"));
  const Run not_classifier = bert_infer("classify --model " + heads + "token" + vocab + " < " + lines);
  CHECK(not_classifier.code == 1);
  CHECK_THAT(not_classifier.err, Contains("is a BertForTokenClassification, not a sequence classifier"));
  fs::remove_all(dir);
}

TEST_CASE("a run's output directory stands for its best model, else its newest checkpoint", "[bert][files]") {
  namespace fs = std::filesystem;
  const fs::path run = temp_path("xgrad_run_dir");
  fs::remove_all(run);
  for (const char* c : {"checkpoint-000010", "checkpoint-000002", "checkpoint-1000000.tmp.1"}) {
    fs::create_directories(run / c);
    fs::copy_file(dir_of("a") + "/config.json", run / c / "config.json");
  }
  fs::create_directories(run / "checkpoint-000020");  // no config.json: an unfinished save, passed over
  std::string note;
  CHECK(model_directory_in(run.string(), &note) == (run / "checkpoint-000010").string());
  CHECK_THAT(note, Contains("is a run's output directory: using") && Contains("its newest checkpoint"));
  fs::create_directories(run / "best");
  fs::copy_file(dir_of("a") + "/config.json", run / "best" / "config.json");
  CHECK(model_directory_in(run.string(), &note) == (run / "best").string());
  CHECK_THAT(note, Contains("its best model"));
  std::string none;
  CHECK(model_directory_in(dir_of("a"), &none) == dir_of("a"));  // a model directory is itself
  CHECK(none.empty());
  CHECK(model_directory_in((run / "nothing").string()) == (run / "nothing").string());
  fs::remove_all(run);
}
