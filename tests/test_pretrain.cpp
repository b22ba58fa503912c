// Pre-training end to end on real text with a tiny model: the data path to batches, the loss
// falling, a stopped-and-resumed run equal to an uninterrupted one (also from a checkpoint written
// before the Trainer/Task split), the saved schedule followed on resume, and clear errors.
#include <catch2/catch.hpp>
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autograd/parallel.hpp"
#include "autograd/precision.hpp"
#include "models/core/pretraining.hpp"
#include "nn/safetensors.hpp"
#include "nn/transformer.hpp"
#include "optim/schedule.hpp"
#include "tests/default_execution.hpp"
#include "tests/run_files.hpp"
#include "tests/temp_path.hpp"
#include "tests/thread_count.hpp"
#include "text/load_tokenizer.hpp"
#include "training/batch.hpp"
#include "training/tasks/finetuning.hpp"
#include "training/tasks/pretraining.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
using Run = PretrainRun;

Run tiny_run(const std::string& out) {
  Run r;
  r.task.corpus = std::string(XGRAD_TEST_DATA_DIR) + "/pretrain_sample.txt";
  r.task.tokenizer = std::string(XGRAD_TEST_DATA_DIR) + "/../../data/bert-base-uncased-vocab.txt";
  r.task.model = "tiny";
  r.task.seq_len = 64;
  r.task.eval_instances = 32;
  r.trainer.batch = 8;
  r.trainer.lr = 2e-3f;
  r.trainer.steps = 40;
  r.trainer.eval_every = 20;
  r.trainer.save_every = 0;
  r.trainer.log_every = 1;
  r.trainer.quiet = true;
  r.trainer.out = temp_path(out);
  fs::remove_all(r.trainer.out);
  return r;
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
  CHECK(batch.inputs.input_ids.to_ints() == std::vector<int64_t>{101, 7, 8, 102, 9, 102, 0, 0, 101, 5, 102, 6, 102, 0, 0, 0});
  CHECK(batch.inputs.token_type_ids.to_ints() == std::vector<int64_t>{0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0});
  CHECK(batch.inputs.attention_mask.to_vector() ==
        std::vector<float>{1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0});
  CHECK(batch.targets.masked_positions.to_ints() == std::vector<int64_t>{1, 4, 11});
  CHECK(batch.targets.masked_labels.to_ints() == std::vector<int64_t>{70, 90, 60});
  CHECK(batch.targets.sentence_labels.to_ints() == std::vector<int64_t>{1, 0});
  CHECK(batch.real_tokens == 11);
  CHECK_THROWS_WITH(make_batch({a}, 5, 0), Contains("--max-seq-length 5"));
}

TEST_CASE("pre-training a tiny BERT on real text: the loss falls", "[pretrain]") {
  Run r = tiny_run("xgrad_pretrain_smoke");
  r.trainer.tensorboard = r.trainer.out + "/tb";
  CHECK(r.go() == 40);
  // TensorBoard event files next to metrics.jsonl (their format is checked in test_tensorboard.cpp)
  size_t event_bytes = 0;
  for (const auto& f : fs::directory_iterator(r.trainer.tensorboard))
    if (f.path().filename().string().rfind("events.out.tfevents.", 0) == 0) event_bytes += fs::file_size(f.path());
  CHECK(event_bytes > 40 * 100);  // 40 logged steps of several scalars
  const auto rows = metrics_rows(r.trainer.out);
  std::vector<double> losses;
  size_t evals = 0;
  for (const auto& row : rows) {
    if (row.contains("loss")) {
      losses.push_back(row["loss"]);
      CHECK(row["loss"].get<double>() == Approx(row["mlm_loss"].get<double>() + row["nsp_loss"].get<double>()));
      CHECK(row.contains("mlm_acc"));
      CHECK(row.contains("tokens_per_s"));
    }
    if (row.contains("eval_perplexity")) {
      ++evals;
      CHECK(std::isfinite(row["eval_perplexity"].get<double>()));
      CHECK(row.contains("eval_nsp_acc"));
      // the most frequent held-out token's share: a constant of the held-out set, above 1/vocabulary
      const double baseline = row["eval_mlm_acc_baseline"].get<double>();
      CHECK(baseline > 1.0 / 30522);
      CHECK(baseline < 0.5);
    }
  }
  REQUIRE(losses.size() == 40);
  const double first = (losses[0] + losses[1] + losses[2] + losses[3] + losses[4]) / 5;
  const double last = (losses[35] + losses[36] + losses[37] + losses[38] + losses[39]) / 5;
  CHECK(first > 10.0);         // ~ln(30522) + ln(2) at the start
  CHECK(last < first - 2.0);   // and clearly learning
  CHECK(evals == 2);
  const fs::path ckpt = fs::path(r.trainer.out) / "checkpoint-000040";
  CHECK(fs::exists(ckpt / "model.safetensors"));
  // the checkpoint carries the tokenizer as Hugging Face lays it out
  for (const char* f : {"vocab.txt", "tokenizer_config.json", "special_tokens_map.json"}) CHECK(fs::exists(ckpt / f));
  CHECK(text::load_tokenizer(ckpt.string())->encode("The cat sat.").ids ==
        text::BertTokenizer::from_file(r.task.tokenizer).encode("The cat sat.").ids);
  const auto state = read_json(ckpt / "training_state.json");
  CHECK(state["task"] == "mlm_nsp");
  CHECK(state["options"]["max_seq_length"] == 64);
  CHECK(state["options"]["learning_rate"].get<float>() == 2e-3f);
  CHECK(!state["options"].contains("output_dir"));  // run control is not saved
  // a checkpoint from before tokenizer files (vocab.txt only) still resumes
  fs::remove(ckpt / "tokenizer_config.json");
  fs::remove(ckpt / "special_tokens_map.json");
  fs::remove(ckpt / "checksums.json");  // nor had it checksums
  Run again = r;
  again.trainer.resume = ckpt.string();
  CHECK(again.go() == 40);
  fs::remove_all(r.trainer.out);
}

TEST_CASE("a run stopped at step k and resumed equals an uninterrupted run", "[pretrain]") {
  Run full = tiny_run("xgrad_pretrain_full");
  full.trainer.steps = 8;
  full.trainer.eval_every = 0;
  full.trainer.grad_accum = 2;  // accumulation and the schedule must resume exactly too
  full.go();
  Run part = tiny_run("xgrad_pretrain_part");
  part.trainer.steps = 8;
  part.trainer.eval_every = 0;
  part.trainer.grad_accum = 2;
  part.trainer.stop_at = 3;
  CHECK(part.go() == 3);
  // Resumed with defaults for what the checkpoint decides (grad_accum among them), and with
  // --keep 1 and frequent saves: the checkpoint it resumed from is removed while it runs.
  Run resumed = tiny_run("xgrad_pretrain_part_resumed");
  resumed.trainer.out = part.trainer.out;  // keep writing into the same directory
  resumed.trainer.resume = part.trainer.out;
  resumed.trainer.steps = 8;  // the same value as saved is accepted
  resumed.trainer.eval_every = 0;
  resumed.trainer.save_every = 2;
  resumed.trainer.keep_checkpoints = 1;
  CHECK(resumed.go() == 8);
  CHECK(!fs::exists(part.trainer.out + "/checkpoint-000003"));
  CHECK(weight_difference(full.trainer.out + "/checkpoint-000008/model.safetensors",
                          part.trainer.out + "/checkpoint-000008/model.safetensors") <= 1e-6);
  fs::remove_all(full.trainer.out);
  fs::remove_all(part.trainer.out);
}

// --precision bf16: the linear layers' GEMMs on bf16 operands, fp32 master weights and optimizer state.
TEST_CASE("pre-training at --precision bf16 learns, stays near fp32, and resumes exactly", "[pretrain][bf16]") {
  auto losses_of = [](const std::string& out) {
    std::vector<double> losses;
    for (const auto& row : metrics_rows(out))
      if (row.contains("loss")) losses.push_back(row["loss"]);
    return losses;
  };
  Run fp32 = tiny_run("xgrad_pretrain_bf16_ref");
  fp32.trainer.steps = 16;
  fp32.trainer.eval_every = 0;
  REQUIRE(fp32.go() == 16);
  Run full = tiny_run("xgrad_pretrain_bf16_full");
  full.trainer.steps = 16;
  full.trainer.eval_every = 0;
  full.trainer.precision = "bf16";
  REQUIRE(full.go() == 16);
  const std::vector<double> l32 = losses_of(fp32.trainer.out), l16 = losses_of(full.trainer.out);
  REQUIRE(l16.size() == 16);
  REQUIRE(l32.size() == 16);
  const double first = (l16[0] + l16[1] + l16[2]) / 3, last = (l16[13] + l16[14] + l16[15]) / 3;
  CHECK(first > 10.0);         // ~ln(30522) + ln(2) at the start
  CHECK(last < first - 1.0);   // learning
  CHECK(l16[0] != l32[0]);     // the first forward already differs: bf16 took effect
  for (size_t i = 0; i < l16.size(); ++i) CHECK(std::fabs(l16[i] - l32[i]) < 0.1);
  const fs::path ckpt = fs::path(full.trainer.out) / "checkpoint-000016";
  CHECK(read_json(ckpt / "training_state.json")["options"]["precision"] == "bf16");

  // stopped at step 6 and resumed with the defaults: the checkpoint brings bf16 back
  Run part = tiny_run("xgrad_pretrain_bf16_part");
  part.trainer.steps = 16;
  part.trainer.eval_every = 0;
  part.trainer.precision = "bf16";
  part.trainer.stop_at = 6;
  REQUIRE(part.go() == 6);
  Run resumed = tiny_run("xgrad_pretrain_bf16_resumed");
  resumed.trainer.out = part.trainer.out;
  resumed.trainer.resume = part.trainer.out;
  resumed.trainer.steps = 16;  // tiny_run's 40 would read as a changed flag
  resumed.trainer.eval_every = 0;
  CHECK(resumed.go() == 16);
  CHECK(weight_difference((ckpt / "model.safetensors").string(),
                          part.trainer.out + "/checkpoint-000016/model.safetensors") == 0);
  CHECK(losses_of(part.trainer.out) == l16);

  // an fp32 run resumed at bf16 is refused, naming the flag; an unknown precision too
  Run changed = tiny_run("xgrad_pretrain_bf16_changed");
  changed.trainer.resume = fp32.trainer.out;
  changed.trainer.steps = 16;
  changed.trainer.precision = "bf16";
  CHECK_THROWS_WITH(changed.go(), Contains("--precision bf16 differs"));
  Run bad = tiny_run("xgrad_pretrain_bf16_bad");
  bad.trainer.precision = "fp16";
  CHECK_THROWS_WITH(bad.go(), Contains("--precision 'fp16': not one of fp32, bf16"));
  CHECK(!fs::exists(bad.trainer.out));
  CHECK(matmul_precision() == MatmulPrecision::FP32);  // the run's setting ends with it
  for (const auto& r : {fp32, full, part}) fs::remove_all(r.trainer.out);
}

TEST_CASE("a resumed run follows the schedule saved in its checkpoint and refuses changed settings", "[pretrain]") {
  Run part = tiny_run("xgrad_pretrain_schedule");
  part.trainer.steps = 8;
  part.trainer.eval_every = 0;
  part.trainer.stop_at = 3;
  REQUIRE(part.go() == 3);
  const fs::path state_file = fs::path(part.trainer.out) / "checkpoint-000003" / "training_state.json";

  // Another --lr, --steps, --schedule or --seq-len for the resumed run is refused, naming the flag.
  Run changed = tiny_run("xgrad_pretrain_schedule_changed");
  changed.trainer.resume = part.trainer.out;
  changed.trainer.lr = 5e-3f;
  CHECK_THROWS_WITH(changed.go(), Contains("--learning-rate 0.005 differs from the checkpoint's 0.002"));
  changed.trainer.lr = 2e-3f;  // the same value is fine; this one fails on the next flag
  changed.trainer.steps = 100;
  CHECK_THROWS_WITH(changed.go(), Contains("--max-steps 100"));
  changed.trainer.steps = 8;
  changed.trainer.schedule = "cosine";
  CHECK_THROWS_WITH(changed.go(), Contains("--schedule cosine"));
  changed.trainer.schedule = "linear";
  changed.task.seq_len = 32;
  CHECK_THROWS_WITH(changed.go(), Contains("--max-seq-length 32"));

  // The schedule comes from the saved state, not from the options: edit it to tell them apart.
  nlohmann::json state = read_json(state_file);
  state["schedule"]["kind"] = "constant";
  state["schedule"]["base_lr"] = 1e-4;
  write_json(state_file, state);
  fs::remove(state_file.parent_path() / "checksums.json");  // edited on purpose
  Run resumed = tiny_run("xgrad_pretrain_schedule_resumed");
  resumed.trainer.out = part.trainer.out;
  resumed.trainer.resume = part.trainer.out;
  resumed.trainer.steps = 8;
  resumed.trainer.eval_every = 0;
  REQUIRE(resumed.go() == 8);
  const auto saved = optim::LrSchedule::from_json(state["schedule"]);
  size_t checked = 0;
  for (const auto& row : metrics_rows(part.trainer.out)) {
    const int64_t step = row["step"];
    if (!row.contains("lr") || step <= 3) continue;
    CHECK(row["lr"].get<double>() == double(saved.at(step - 1)));  // step s used the rate of update s - 1
    ++checked;
  }
  CHECK(checked == 5);
  fs::remove_all(part.trainer.out);
}

TEST_CASE("a checkpoint written before the Trainer/Task split resumes to the uninterrupted run's weights", "[pretrain]") {
  // tests/data/pretrain_v1/: made by the pre-split bert_pretrain (training-state format 1) with a
  // 1-layer model and a 400-token vocabulary; see its README. checkpoint-000003 is a run stopped at step 3
  // of 6; full-000006.safetensors the weights of the same run uninterrupted.
  const fs::path data = fs::path(XGRAD_TEST_DATA_DIR) / "pretrain_v1";
  const fs::path out = temp_path("xgrad_pretrain_v1_resumed");
  fs::remove_all(out);
  fs::create_directories(out);
  fs::copy(data / "checkpoint-000003", out / "checkpoint-000003");
  // The corpus path saved in it is relative to the source tree; point it at this checkout's copy.
  const fs::path state_file = out / "checkpoint-000003" / "training_state.json";
  nlohmann::json state = read_json(state_file);
  CHECK(!state.contains("format"));  // really the old layout
  state["options"]["corpus"] = std::string(XGRAD_TEST_DATA_DIR) + "/pretrain_sample.txt";
  write_json(state_file, state);

  // That run drew its attention dropout masks with dropout() on the (B, heads, T, T) weights;
  // multi_head_attention draws other (equally random) masks, so it follows the run only unfused.
  // It drew them at every row of the last layer too, which the sparse last layer does not compute.
  nn::ExecutionOptions unfused_dense;
  unfused_dense.flash_attention = false;
  unfused_dense.sparse_last_layer = false;
  test::ScopedDefaultExecution as_that_run(unfused_dense);
  Run resumed;  // defaults everywhere: the checkpoint decides
  resumed.trainer.out = out.string();
  resumed.trainer.resume = out.string();
  resumed.trainer.quiet = true;
  REQUIRE(resumed.go() == 6);
  // The uninterrupted run was made on another CPU: its GEMM blocking and thread split may sum in
  // another order, so the last bits may differ (3e-8 on an AMD EPYC). A misread optimizer state or
  // data position would differ by orders of magnitude more. Bit-exact resume on one machine is the
  // "stopped at step k and resumed" test above.
  CHECK(weight_difference((data / "full-000006.safetensors").string(), (out / "checkpoint-000006/model.safetensors").string()) < 1e-6);
  const auto resumed_state = read_json(out / "checkpoint-000006" / "training_state.json");
  CHECK(resumed_state["format"] == 3);
  CHECK(resumed_state["options"]["learning_rate"] == state["options"]["lr"]);  // the old key's value, saved under the new one
  CHECK_FALSE(resumed_state["options"].contains("lr"));
  CHECK(resumed_state["options"]["eval_min_documents"] == 1);  // the split it started with, saved for the next resume
  CHECK(resumed_state["options"]["eval_documents_at"] == "end");
  fs::remove_all(out);
}

TEST_CASE("held out: 2% of a corpus's documents, at least two, spread through it, never all of them", "[pretrain]") {
  xg::training::PretrainOptions o;  // --eval-min-documents 2 --eval-documents-at spread
  using xg::training::held_out_documents;
  using Docs = std::vector<size_t>;
  // The bundled corpus (34 Moby-Dick chapters, then 56 State of the Union addresses in date order):
  // a chapter and an address of 1922, not two addresses of the 2000s, so that a held-out NSP negative
  // asks what training's do (another document, most often another source or era)
  CHECK(held_out_documents(90, o) == Docs{22, 67});
  CHECK(held_out_documents(40, o) == Docs{10, 30});
  CHECK(held_out_documents(500, o) == Docs{25, 75, 125, 175, 225, 275, 325, 375, 425, 475});
  CHECK(held_out_documents(3, o) == Docs{0, 2});
  CHECK(held_out_documents(2, o) == Docs{1});  // one trains
  CHECK(held_out_documents(1, o).empty());
  o.eval_documents_at = "end";
  CHECK(held_out_documents(90, o) == Docs{88, 89});
  o.eval_min_documents = 1;  // as checkpoints written before the two options held out
  CHECK(held_out_documents(90, o) == Docs{89});
  CHECK(held_out_documents(500, o) == Docs{490, 491, 492, 493, 494, 495, 496, 497, 498, 499});
  o.eval_instances = 0;
  CHECK(held_out_documents(90, o).empty());
}

TEST_CASE("count_correct is argmax == label: the first of tied maxima, ignored labels never right", "[pretrain]") {
  // 5 rows of 37 logits (the maximum past the SIMD width's multiple in row 0)
  std::vector<float> v(5 * 37, 0.f);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 7) * 0.1f - 1.f;
  v[0 * 37 + 36] = 5.f;                      // row 0: argmax 36, label 36 -> right
  v[1 * 37 + 3] = 5.f, v[1 * 37 + 20] = 5.f;  // row 1: tie, argmax 3, label 20 -> wrong
  v[2 * 37 + 3] = 5.f, v[2 * 37 + 20] = 5.f;  // row 2: the same tie, label 3 -> right
  v[3 * 37 + 10] = 5.f;                      // row 3: label -100 (ignored) -> not counted
  v[4 * 37 + 0] = 5.f;                       // row 4: argmax 0, label 1 -> wrong
  const Tensor logits = Tensor::from_vector(v, {5, 37});
  const Tensor labels = Tensor::from_ints({36, 20, 3, -100, 1}, {5});
  CHECK(models::count_correct(logits, labels) == 2);
  CHECK(models::count_correct(logits, Tensor::from_ints({36, 3, 3, 10, 0}, {5})) == 5);
  CHECK(models::count_correct(logits, Tensor::from_ints({37, 3, 1000, 10, 0}, {5})) == 3);  // past C: never right
}

TEST_CASE("pre-training refuses bad settings with clear errors", "[pretrain][errors]") {
  Run r = tiny_run("xgrad_pretrain_bad");
  r.task.corpus = "/nonexistent/corpus.txt";
  CHECK_THROWS_WITH(r.go(), Contains("/nonexistent/corpus.txt"));
  r = tiny_run("xgrad_pretrain_bad");
  r.task.model = "gigantic";
  CHECK_THROWS_WITH(r.go(), Contains("'gigantic'"));
  r = tiny_run("xgrad_pretrain_bad");
  r.trainer.optimizer = "rmsprop";
  CHECK_THROWS_WITH(r.go(), Contains("rmsprop"));
  r = tiny_run("xgrad_pretrain_bad");
  r.trainer.resume = "/nonexistent/run";
  CHECK_THROWS_WITH(r.go(), Contains("no checkpoint"));
  r = tiny_run("xgrad_pretrain_bad");
  r.trainer.lr = std::nanf("");
  CHECK_THROWS_WITH(r.go(), Contains("--learning-rate") && Contains("not a finite number"));
  r = tiny_run("xgrad_pretrain_bad");
  r.task.masked_lm_prob = 1.5f;
  CHECK_THROWS_WITH(r.go(), Contains("--mlm-probability '1.5': must be in [0, 1]"));
  r = tiny_run("xgrad_pretrain_bad");
  r.trainer.tensorboard = "/proc/xgrad_tb";  // cannot be created
  CHECK_THROWS_WITH(r.go(), Contains("[tensorboard] /proc/xgrad_tb"));
  const std::string empty = temp_path("xgrad_empty_corpus.txt");
  std::ofstream(empty) << "\n\n";
  r = tiny_run("xgrad_pretrain_bad");
  r.task.corpus = empty;
  CHECK_THROWS_WITH(r.go(), Contains("empty corpus"));
  fs::remove(empty);
  fs::remove_all(r.trainer.out);
}

TEST_CASE("training is bit-identical whatever the thread count", "[pretrain]") {
  RestoreThreads restore;
  std::vector<nn::StateDict> results;
  for (int threads : {1, 2}) {
    Run r = tiny_run("xgrad_pretrain_threads_" + std::to_string(threads));
    r.trainer.steps = 3;
    r.trainer.eval_every = 0;
    r.trainer.threads = threads;
    r.go();
    results.push_back(nn::safetensors::read_float_tensors(r.trainer.out + "/checkpoint-000003/model.safetensors"));
    fs::remove_all(r.trainer.out);
  }
  size_t differing = 0;  // count, not the vectors: a failure message must stay readable
  for (const auto& [n, t] : results[0]) {
    const Tensor& u = results[1].at(n);
    for (size_t i = 0; i < t.numel(); ++i) differing += t.data()[i] != u.data()[i];
  }
  CHECK(differing == 0);
}

TEST_CASE("bert_pretrain's options: one table each for the Trainer and the task", "[pretrain][options]") {
  TrainerOptions trainer;
  PretrainOptions task;
  CLI::App app("bert_pretrain", "bert_pretrain");
  PretrainOptions::table().add_to(app, task, "Data and model");
  TrainerOptions::table().add_to(app, trainer, "Training");
  app.parse("--lr 5e-4 --grad-accum 4 --seq-len 64 --whole-word-mask --keep 3 --tensorboard tb", false);
  CHECK(trainer.lr == 5e-4f);
  CHECK(trainer.grad_accum == 4);
  CHECK(trainer.keep_checkpoints == 3);
  CHECK(trainer.tensorboard == "tb");
  CHECK(task.seq_len == 64);
  CHECK(task.whole_word_mask);
  const std::string help = app.help();
  CHECK_THAT(help, Contains("--max-steps,--steps INT=800"));  // the canonical name first (the programs' --help shows it alone)
  // transformers' names are the canonical ones, the short names aliases: the same options, saved under the same keys
  TrainerOptions hf_trainer;
  PretrainOptions hf_task;
  CLI::App hf("bert_pretrain", "bert_pretrain");
  PretrainOptions::table().add_to(hf, hf_task, "Data and model");
  TrainerOptions::table().add_to(hf, hf_trainer, "Training");
  hf.parse("--learning-rate 5e-4 --gradient-accumulation-steps 4 --max-seq-length 64 --whole-word-mask --save-total-limit 3 "
           "--tensorboard tb --max-steps 9 --per-device-train-batch-size 7 --output-dir o --mlm-probability 0.2", false);
  CHECK(TrainerOptions::table().saved(hf_trainer).at("learning_rate") == TrainerOptions::table().saved(trainer).at("learning_rate"));
  CHECK(hf_trainer.grad_accum == 4);
  CHECK(hf_trainer.keep_checkpoints == 3);
  CHECK(hf_trainer.steps == 9);
  CHECK(hf_trainer.batch == 7);
  CHECK(hf_trainer.out == "o");
  CHECK(hf_task.seq_len == 64);
  CHECK(hf_task.masked_lm_prob == 0.2f);
  CHECK(hf_trainer.flags_given.count("--learning-rate"));  // given under its canonical name, as a resumed run compares them
  CHECK(trainer.flags_given.count("--learning-rate"));       // whichever name was typed
  CHECK_THAT(help, Contains("(\"\": tiny; with --init-from the checkpoint's config"));  // unset: a conflict is a choice
  CHECK_THAT(help, Contains("--extend-vocab INT=0"));
  // Saved under the canonical names' keys; a checkpoint that saved them under the short names'
  // ("lr", "seq_len") restores too (the pre-split checkpoint's resume below).
  nlohmann::json saved = TrainerOptions::table().saved(trainer);
  saved.update(PretrainOptions::table().saved(task));
  for (const char* key : {"train_file", "tokenizer", "train_vocab", "cased", "max_predictions", "mlm_probability", "whole_word_mask",
                          "eval_instances", "model", "max_seq_length", "per_device_train_batch_size",
                          "gradient_accumulation_steps", "learning_rate", "warmup_steps", "max_steps", "schedule", "optimizer",
                          "weight_decay", "clip", "seed"})
    CHECK(saved.contains(key));
  for (const char* key : {"init_from", "extend_vocab", "extend_min_count", "extend_min_pieces"})  // an --init-from run resumes exactly
    CHECK(saved.contains(key));
  for (const char* key : {"eval_min_documents", "eval_documents_at"})  // so does its held-out split
    CHECK(saved.contains(key));
  CHECK_THROWS_AS(app.parse("--batch -1", false), CLI::ValidationError);
  CHECK_THROWS_AS(app.parse("--no-such-flag", false), CLI::ExtrasError);
}

namespace {
// Every option of `program`'s command line (the Trainer's options and TaskOptions') with an alias:
// the alias, given the option's default value (or alone, for a switch), parses into the same option
// as its canonical name.
template <class TaskOptions>
void check_every_alias(const std::string& program) {
  const auto make_app = [&] {
    static TrainerOptions trainer;
    static TaskOptions task;
    auto app = std::make_unique<CLI::App>(program, program);
    TrainerOptions::table().add_to(*app, trainer, "Training");
    TaskOptions::table().add_to(*app, task, "Model and data");
    return app;
  };
  size_t aliases = 0;
  const auto listing = make_app();
  for (const CLI::Option* o : listing->get_options()) {
    const auto names = o->get_lnames();
    for (size_t k = 1; k < names.size(); ++k, ++aliases) {
      auto app = make_app();
      const std::string value = o->get_type_size() == 0 ? "" : (o->get_default_str().empty() ? "1" : o->get_default_str());
      INFO("--" << names[k] << " " << value << " (the alias of --" << names[0] << ")");
      CHECK_NOTHROW(app->parse("--" + names[k] + (value.empty() ? "" : " " + value), false));
      CHECK(app->count("--" + names[0]) == 1);
    }
  }
  CHECK(aliases >= 8);
}
}  // namespace

TEST_CASE("every short flag name of bert_pretrain and bert_finetune still parses, as an alias of its canonical one", "[pretrain][options]") {
  check_every_alias<PretrainOptions>("bert_pretrain");
  check_every_alias<FinetuneOptions>("bert_finetune");
}
