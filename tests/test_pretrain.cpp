// Pre-training end to end on real text with a tiny model: the data path to batches, the loss
// falling, a stopped-and-resumed run equal to an uninterrupted one, and clear errors.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nn/safetensors.hpp"
#include "text/load_tokenizer.hpp"
#include "training/batch.hpp"
#include "training/pretrainer.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
PretrainOptions tiny_run(const std::string& out) {
  PretrainOptions o;
  o.corpus = std::string(XGRAD_TEST_DATA_DIR) + "/pretrain_sample.txt";
  o.vocab = std::string(XGRAD_TEST_DATA_DIR) + "/../../data/bert-base-uncased-vocab.txt";
  o.model = "tiny";
  o.seq_len = 64;
  o.batch = 8;
  o.lr = 2e-3f;
  o.steps = 40;
  o.eval_every = 20;
  o.eval_instances = 32;
  o.save_every = 0;
  o.log_every = 1;
  o.quiet = true;
  o.out = (fs::temp_directory_path() / out).string();
  fs::remove_all(o.out);
  return o;
}

std::vector<nlohmann::json> metrics(const std::string& out) {
  std::ifstream in(fs::path(out) / "metrics.jsonl");
  std::vector<nlohmann::json> rows;
  for (std::string l; std::getline(in, l);) rows.push_back(nlohmann::json::parse(l));
  return rows;
}
}  // namespace

TEST_CASE("batches from instances: padding, segments, flattened masked positions", "[pretrain]") {
  text::Instance a;
  a.tokens = {101, 7, 8, 102, 9, 102};
  a.a_end = 3;
  a.is_random_next = true;
  a.masked_positions = {1, 4};
  a.masked_labels = {70, 90};
  text::Instance b = a;
  b.tokens = {101, 5, 102, 6, 102};
  b.a_end = 2;
  b.is_random_next = false;
  b.masked_positions = {3};
  b.masked_labels = {60};
  const Batch batch = make_batch({a, b}, 8, 0);
  CHECK(batch.inputs.input_ids == std::vector<int64_t>{101, 7, 8, 102, 9, 102, 0, 0, 101, 5, 102, 6, 102, 0, 0, 0});
  CHECK(batch.inputs.token_type_ids == std::vector<int64_t>{0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0});
  CHECK(batch.inputs.attention_mask.to_vector() ==
        std::vector<float>{1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0});
  CHECK(batch.targets.masked_positions == std::vector<int64_t>{1, 4, 11});
  CHECK(batch.targets.masked_labels == std::vector<int64_t>{70, 90, 60});
  CHECK(batch.targets.next_sentence_labels == std::vector<int64_t>{1, 0});
  CHECK(batch.real_tokens == 11);
  CHECK_THROWS_WITH(make_batch({a}, 5, 0), Contains("--seq-len 5"));
}

TEST_CASE("pre-training a tiny BERT on real text: the loss falls", "[pretrain]") {
  const PretrainOptions o = tiny_run("xgrad_pretrain_smoke");
  CHECK(run_pretraining(o) == 40);
  const auto rows = metrics(o.out);
  std::vector<double> losses;
  size_t evals = 0;
  for (const auto& r : rows) {
    if (r.contains("loss")) losses.push_back(r["loss"]);
    if (r.contains("eval_perplexity")) {
      ++evals;
      CHECK(std::isfinite(r["eval_perplexity"].get<double>()));
    }
  }
  REQUIRE(losses.size() == 40);
  const double first = (losses[0] + losses[1] + losses[2] + losses[3] + losses[4]) / 5;
  const double last = (losses[35] + losses[36] + losses[37] + losses[38] + losses[39]) / 5;
  CHECK(first > 10.0);         // ~ln(30522) + ln(2) at the start
  CHECK(last < first - 2.0);   // and clearly learning
  CHECK(evals == 2);
  CHECK(fs::exists(fs::path(o.out) / "checkpoint-000040" / "model.safetensors"));
  // the checkpoint carries the tokenizer as Hugging Face lays it out
  const std::string ckpt = (fs::path(o.out) / "checkpoint-000040").string();
  for (const char* f : {"vocab.txt", "tokenizer_config.json", "special_tokens_map.json"}) CHECK(fs::exists(fs::path(ckpt) / f));
  CHECK(text::load_tokenizer(ckpt)->encode("The cat sat.").ids == text::BertTokenizer::from_file(o.vocab).encode("The cat sat.").ids);
  // a checkpoint from before tokenizer files (vocab.txt only) still resumes
  fs::remove(fs::path(ckpt) / "tokenizer_config.json");
  fs::remove(fs::path(ckpt) / "special_tokens_map.json");
  PretrainOptions again = o;
  again.resume = ckpt;
  CHECK(run_pretraining(again) == 40);
  fs::remove_all(o.out);
}

TEST_CASE("a run stopped at step k and resumed equals an uninterrupted run", "[pretrain]") {
  PretrainOptions full = tiny_run("xgrad_pretrain_full");
  full.steps = 8;
  full.eval_every = 0;
  full.grad_accum = 2;  // accumulation and the schedule must resume exactly too
  run_pretraining(full);
  PretrainOptions part = tiny_run("xgrad_pretrain_part");
  part.steps = 8;
  part.eval_every = 0;
  part.grad_accum = 2;
  part.stop_at = 3;
  CHECK(run_pretraining(part) == 3);
  PretrainOptions resumed = tiny_run("xgrad_pretrain_part_resumed");
  resumed.out = part.out;  // keep writing into the same directory
  resumed.resume = part.out;
  resumed.steps = 8;
  resumed.eval_every = 0;
  CHECK(run_pretraining(resumed) == 8);
  const auto a = nn::safetensors::read_float_tensors(full.out + "/checkpoint-000008/model.safetensors");
  const auto b = nn::safetensors::read_float_tensors(part.out + "/checkpoint-000008/model.safetensors");
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (const auto& [n, t] : a)
    for (size_t i = 0; i < t.numel(); ++i) worst = std::max(worst, double(std::fabs(t.data()[i] - b.at(n).data()[i])));
  CHECK(worst <= 1e-6);
  fs::remove_all(full.out);
  fs::remove_all(part.out);
}

TEST_CASE("pre-training refuses bad settings with clear errors", "[pretrain][errors]") {
  PretrainOptions o = tiny_run("xgrad_pretrain_bad");
  o.corpus = "/nonexistent/corpus.txt";
  CHECK_THROWS_WITH(run_pretraining(o), Contains("/nonexistent/corpus.txt"));
  o = tiny_run("xgrad_pretrain_bad");
  o.model = "gigantic";
  CHECK_THROWS_WITH(run_pretraining(o), Contains("'gigantic'"));
  o = tiny_run("xgrad_pretrain_bad");
  o.optimizer = "rmsprop";
  CHECK_THROWS_WITH(run_pretraining(o), Contains("rmsprop"));
  o = tiny_run("xgrad_pretrain_bad");
  o.resume = "/nonexistent/run";
  CHECK_THROWS_WITH(run_pretraining(o), Contains("no checkpoint"));
  const std::string empty = (fs::temp_directory_path() / "xgrad_empty_corpus.txt").string();
  std::ofstream(empty) << "\n\n";
  o = tiny_run("xgrad_pretrain_bad");
  o.corpus = empty;
  CHECK_THROWS_WITH(run_pretraining(o), Contains("empty corpus"));
  fs::remove_all(o.out);
}

TEST_CASE("training is bit-identical whatever the thread count", "[pretrain]") {
  const int before = num_threads();
  std::vector<nn::StateDict> results;
  for (int threads : {1, 2}) {
    PretrainOptions o = tiny_run("xgrad_pretrain_threads_" + std::to_string(threads));
    o.steps = 3;
    o.eval_every = 0;
    o.threads = threads;
    run_pretraining(o);
    results.push_back(nn::safetensors::read_float_tensors(o.out + "/checkpoint-000003/model.safetensors"));
    fs::remove_all(o.out);
  }
  set_num_threads(before);
  size_t differing = 0;  // count, not the vectors: a failure message must stay readable
  for (const auto& [n, t] : results[0]) {
    const Tensor& u = results[1].at(n);
    for (size_t i = 0; i < t.numel(); ++i) differing += t.data()[i] != u.data()[i];
  }
  CHECK(differing == 0);
}
