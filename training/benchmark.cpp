#include "training/benchmark.hpp"

#include <chrono>
#include <fstream>
#include <string>

#include "autograd/parallel.hpp"
#include "models/pretraining.hpp"
#include "models/registry.hpp"
#include "optim/optim.hpp"
#include "training/batch.hpp"

namespace xg::training {

double peak_rss_mb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

BenchmarkResult run_benchmark(const TrainerOptions& opt, const PretrainOptions& task) {
  if (opt.threads > 0) set_num_threads(opt.threads);
  const nlohmann::json config = fresh_model_config(task.model_or_default(), 0, -1, -1, -1, task.seq_len);
  const size_t vocab = config.at("vocab_size").get<size_t>();
  auto model = models::build_model(config, task.model_or_default(), pretraining_architecture(task));
  auto* heads = dynamic_cast<models::PretrainingHeads*>(model.get());
  Generator gen(opt.seed);
  model->init_weights(gen);
  model->train();
  heads->set_checkpoint_activations(task.checkpoint_activations);
  model->flatten_parameters();
  optim::AdamW adamw(optim::bert_param_groups(model->named_parameters(), opt.weight_decay), opt.lr);
  adamw.bind(*model->arena());
  std::vector<Batch> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(random_batch(opt.batch, task.seq_len, vocab, config.value("type_vocab_size", size_t(2)), gen));
  auto step = [&](size_t i) {
    model->zero_grad();
    const auto out = heads->forward_pretraining(batches[i % batches.size()].inputs, batches[i % batches.size()].targets);
    out.loss.backward();
    adamw.step();
  };
  step(0);
  step(1);
  const int64_t n = std::max<int64_t>(opt.steps, 1);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) step(size_t(i));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {double(n) * double(opt.batch * task.seq_len) / secs, secs / double(n), peak_rss_mb(), model->num_parameters()};
}

}  // namespace xg::training
