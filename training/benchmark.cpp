#include "training/benchmark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/parallel.hpp"
#include "models/checkpoint.hpp"
#include "models/head_config.hpp"
#include "models/pretraining.hpp"
#include "models/registry.hpp"
#include "optim/optim.hpp"
#include "training/batch.hpp"
#include "training/tasks/finetuning.hpp"
#include "training/tasks/pretraining.hpp"

namespace xg::training {

double peak_rss_mb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

namespace {
// Two warm-up steps, then opt.steps timed ones at opt.precision of `loss_of(i)`'s backward and an AdamW step over
// the model's flat parameters, as the Trainer takes them.
BenchmarkResult time_steps(const TrainerOptions& opt, models::PretrainedModel& model, size_t tokens_per_step,
                           const std::function<Tensor(size_t)>& loss_of) {
  MatmulPrecisionGuard precision(training_precision(opt));
  model.train();
  model.flatten_parameters();
  optim::AdamW adamw(optim::bert_param_groups(model.named_parameters(), opt.weight_decay), opt.lr);
  adamw.bind(*model.arena());
  auto step = [&](size_t i) {
    model.zero_grad();
    loss_of(i).backward();
    adamw.step();
  };
  step(0);
  step(1);
  const int64_t n = std::max<int64_t>(opt.steps, 1);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) step(size_t(i));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {double(n) * double(tokens_per_step) / secs, secs / double(n), peak_rss_mb(), model.num_parameters()};
}

}  // namespace

BenchmarkResult run_benchmark(const TrainerOptions& opt, const PretrainOptions& task) {
  if (opt.threads > 0) set_num_threads(opt.threads);
  const nlohmann::json config = fresh_model_config(task.model_or_default(), 0, -1, -1, -1, task.seq_len);
  const size_t vocab = config.at("vocab_size").get<size_t>();
  auto model = models::build_model(config, task.model_or_default(), pretraining_architecture(task));
  auto* heads = dynamic_cast<models::PretrainingHeads*>(model.get());
  Generator gen(opt.seed);
  model->init_weights(gen);
  heads->set_checkpoint_activations(task.checkpoint_activations);
  std::vector<Batch> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(random_batch(opt.batch, task.seq_len, vocab, config.value("type_vocab_size", size_t(2)), gen));
  return time_steps(opt, *model, opt.batch * task.seq_len, [&](size_t i) {
    return heads->forward_pretraining(batches[i % batches.size()].inputs, batches[i % batches.size()].targets).loss;
  });
}

BenchmarkResult run_finetune_benchmark(const TrainerOptions& opt, const std::string& preset, size_t seq_len, size_t num_labels) {
  if (opt.threads > 0) set_num_threads(opt.threads);
  nlohmann::json config = fresh_model_config(preset, 0, -1, -1, -1, seq_len);
  models::HeadConfig::with_num_labels(num_labels).add_to_json(config);
  const size_t vocab = config.at("vocab_size").get<size_t>();
  auto model = models::build_model(config, preset, head_architecture(config.at("model_type").get<std::string>(), "ForSequenceClassification", "--model " + preset));
  Generator gen(opt.seed);
  model->init_weights(gen);
  std::vector<Batch> batches;  // pre-training's random ids, without their targets: labels instead
  std::vector<Tensor> labels;
  for (int i = 0; i < 4; ++i) {
    batches.push_back(random_batch(opt.batch, seq_len, vocab, config.value("type_vocab_size", size_t(2)), gen));
    std::vector<int64_t> ids(opt.batch);
    for (auto& id : ids) id = int64_t(gen.below(num_labels));
    labels.push_back(Tensor::from_ints(ids, {opt.batch}));
  }
  return time_steps(opt, *model, opt.batch * seq_len, [&](size_t i) {
    return model->forward_named(batches[i % batches.size()].inputs, {{"labels", labels[i % labels.size()]}}).at("loss");
  });
}

BenchmarkResult run_inference_benchmark(const std::string& model, size_t batch, size_t seq_len, size_t steps,
                                        int threads, uint64_t seed, MatmulPrecision precision) {
  if (threads > 0) set_num_threads(threads);
  Generator gen(seed);
  std::unique_ptr<models::PretrainedModel> owner;
  if (std::filesystem::is_directory(model)) {
    owner = models::load_pretrained(model, seed).model;
  } else {
    owner = models::build_model(fresh_model_config(model, 0, -1, -1, -1, seq_len), model);
    owner->init_weights(gen);
  }
  models::PretrainedModel& encoder = owner->base_model();
  const nlohmann::json config = encoder.family_config_json();  // the inputs check --seq-len against its positions
  encoder.eval();
  NoGradGuard no_grad;
  std::vector<Batch> batches;
  for (int i = 0; i < 4; ++i)
    batches.push_back(random_batch(batch, seq_len, config.at("vocab_size").get<size_t>(), config.value("type_vocab_size", size_t(2)), gen));
  auto pass = [&](size_t i) { return encoder.forward_named(batches[i % batches.size()].inputs).at("last_hidden_state"); };
  MatmulPrecisionGuard timed_precision(precision);
  double max_diff = -1, mean_diff = -1;
  if (precision != MatmulPrecision::FP32) {
    Tensor reference;
    {
      MatmulPrecisionGuard fp32(MatmulPrecision::FP32);
      reference = pass(0).contiguous();
    }
    const Tensor low = pass(0).contiguous();
    const float *r = reference.data(), *l = low.data();
    double sum = 0;
    max_diff = 0;
    for (size_t i = 0; i < low.numel(); ++i) {
      const double d = std::fabs(double(l[i]) - double(r[i]));
      max_diff = std::max(max_diff, d);
      sum += d;
    }
    mean_diff = sum / double(std::max<size_t>(1, low.numel()));
  }
  pass(0);
  pass(1);
  const size_t n = std::max<size_t>(steps, 1);
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) pass(i);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {double(n * batch * seq_len) / secs, secs / double(n), peak_rss_mb(), encoder.num_parameters(), max_diff,
          mean_diff};
}

}  // namespace xg::training
