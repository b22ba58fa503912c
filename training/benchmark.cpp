#include "training/benchmark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/parallel.hpp"
#include "models/core/head_config.hpp"
#include "models/core/model_spec.hpp"
#include "models/core/pretraining.hpp"
#include "models/core/registry.hpp"
#include "nn/transformer.hpp"
#include "optim/optim.hpp"
#include "training/batch.hpp"
#include "training/tasks/finetuning.hpp"
#include "training/tasks/pretraining.hpp"

namespace xg::training {

namespace {
// Two warm-up steps, then opt.steps timed ones at opt.precision of `loss_of(i)`'s backward and an
// optimizer step (--optimizer, else the recipe's) over the model's flat parameters, as the
// Trainer takes them.
BenchmarkResult time_steps(const TrainerOptions& opt, models::PretrainedModel& model, const OptimizerDefaults& recipe,
                           size_t tokens_per_step, const std::function<Tensor(size_t)>& loss_of) {
  MatmulPrecisionGuard precision(training_precision(opt));
  set_padding_free(model, opt.padding_free);
  model.train();
  model.flatten_parameters();
  const auto optimizer = make_optimizer(opt, optim::bert_param_groups(model.named_parameters(), opt.weight_decay), recipe);
  optimizer->bind(*model.arena());
  auto step = [&](size_t i) {
    model.zero_grad();
    loss_of(i).backward();
    optimizer->step();
  };
  step(0);
  step(1);
  const int64_t n = std::max<int64_t>(opt.steps, 1);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) step(size_t(i));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BenchmarkResult r{double(n) * double(tokens_per_step) / secs, secs / double(n), inference::peak_rss_mb(), model.num_parameters()};
  r.optimizer = optimizer->name();
  return r;
}

}  // namespace

BenchmarkResult run_benchmark(const TrainerOptions& opt, const PretrainOptions& task) {
  if (opt.threads > 0) set_num_threads(opt.threads);
  const nlohmann::json config = models::fresh_model_config(task.model_or_default(), 0, -1, -1, -1, task.seq_len);
  const size_t vocab = config.at("vocab_size").get<size_t>();
  // absurd sizes end in a message naming the flags, not in std::bad_alloc
  refuse_if_too_big_to_train(config, opt.batch, task.seq_len, size_t(std::ceil(0.15 * double(task.seq_len))),
                             task.checkpoint_activations);
  auto model = models::build_model(config, task.model_or_default(), pretraining_architecture(task));
  auto* heads = dynamic_cast<models::PretrainingHeads*>(model.get());
  Generator gen(opt.seed);
  model->init_weights(gen);
  heads->set_checkpoint_activations(task.checkpoint_activations);
  std::vector<Batch> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(random_batch(opt.batch, task.seq_len, vocab, config.value("type_vocab_size", size_t(2)), gen));
  return time_steps(opt, *model, pretraining_optimizer_defaults(model->model_type()), opt.batch * task.seq_len, [&](size_t i) {
    return heads->forward_pretraining(batches[i % batches.size()].inputs, batches[i % batches.size()].targets).loss;
  });
}

BenchmarkResult run_finetune_benchmark(const TrainerOptions& opt, const std::string& preset, size_t seq_len, size_t num_labels) {
  if (opt.threads > 0) set_num_threads(opt.threads);
  nlohmann::json config = models::fresh_model_config(preset, 0, -1, -1, -1, seq_len);
  models::HeadConfig::with_num_labels(num_labels).add_to_json(config);
  refuse_if_too_big_to_train(config, opt.batch, seq_len);
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
  return time_steps(opt, *model, {}, opt.batch * seq_len, [&](size_t i) {
    return model->forward_named(batches[i % batches.size()].inputs, {{"labels", labels[i % labels.size()]}}).at("loss");
  });
}

}  // namespace xg::training
