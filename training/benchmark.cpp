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
#include "models/core/checkpoint.hpp"
#include "models/core/family_tokenizer.hpp"
#include "models/core/head_config.hpp"
#include "models/core/pretraining.hpp"
#include "models/core/registry.hpp"
#include "nn/transformer.hpp"
#include "nn/fused_encoder.hpp"
#include "nn/packed_weights.hpp"
#include "optim/optim.hpp"
#include "training/batch.hpp"
#include "training/tasks/finetuning.hpp"
#include "training/tasks/pretraining.hpp"
#include "util/lines.hpp"

namespace xg::training {

double peak_rss_mb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

namespace {
// Two warm-up steps, then opt.steps timed ones at opt.precision of `loss_of(i)`'s backward and an
// optimizer step (--optimizer, else the recipe's) over the model's flat parameters, as the
// Trainer takes them.
BenchmarkResult time_steps(const TrainerOptions& opt, models::PretrainedModel& model, const OptimizerDefaults& recipe,
                           size_t tokens_per_step, const std::function<Tensor(size_t)>& loss_of) {
  MatmulPrecisionGuard precision(training_precision(opt));
  nn::PaddingFreeGuard padding_free(opt.padding_free || nn::padding_free_enabled());
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
  BenchmarkResult r{double(n) * double(tokens_per_step) / secs, secs / double(n), peak_rss_mb(), model.num_parameters()};
  r.optimizer = optimizer->name();
  return r;
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
  return time_steps(opt, *model, pretraining_optimizer_defaults(model->model_type()), opt.batch * task.seq_len, [&](size_t i) {
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
  return time_steps(opt, *model, {}, opt.batch * seq_len, [&](size_t i) {
    return model->forward_named(batches[i % batches.size()].inputs, {{"labels", labels[i % labels.size()]}}).at("loss");
  });
}

namespace {

// The first `count` non-empty lines of `path`, tokenized with special tokens, cut to seq_len and
// padded to the longest.
Batch sentence_batch(const std::string& path, const text::Tokenizer& tok, size_t count, size_t seq_len) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("[bert_infer bench] cannot read --sentences {}", path));
  std::vector<models::Sequence> sequences;
  text::EncodeOptions enc;
  enc.max_length = seq_len;
  for (std::string line; sequences.size() < count && getline_lf(in, line);) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const text::Encoding e = tok.encode(line, enc);
    sequences.push_back({std::vector<int64_t>(e.ids.begin(), e.ids.end()), std::vector<int64_t>(e.type_ids.begin(), e.type_ids.end())});
  }
  if (sequences.size() < count)
    throw std::runtime_error(fmt::format("[bert_infer bench] --sentences {} has {} non-empty lines, fewer than --batch {}",
                                         path, sequences.size(), count));
  Batch b;
  b.inputs = models::pad_sequences(sequences, tok.pad_id());
  return b;
}

size_t real_tokens(const models::ModelInputs& in) {
  if (!in.attention_mask.defined()) return in.batch() * in.seq_len();
  const std::vector<float> m = in.attention_mask.to_vector();
  return size_t(std::count_if(m.begin(), m.end(), [](float v) { return v != 0.f; }));
}

}  // namespace

BenchmarkResult run_inference_benchmark(const InferenceBenchmarkOptions& opt) {
  if (opt.threads > 0) set_num_threads(opt.threads);
  Generator gen(opt.seed);
  std::unique_ptr<models::PretrainedModel> owner;
  const bool from_dir = std::filesystem::is_directory(opt.model);
  if (from_dir) {
    owner = models::load_pretrained(opt.model, opt.seed).model;
  } else {
    owner = models::build_model(fresh_model_config(opt.model, 0, -1, -1, -1, opt.seq_len), opt.model);
    owner->init_weights(gen);
  }
  models::PretrainedModel& encoder = owner->base_model();
  const nlohmann::json config = encoder.family_config_json();  // the inputs check --seq-len against its positions
  encoder.eval();
  NoGradGuard no_grad;
  std::vector<Batch> batches;
  if (!opt.sentences.empty()) {
    if (opt.vocab.empty() && !from_dir)
      throw std::invalid_argument("[bert_infer bench] --sentences needs --vocab with a preset --model (a checkpoint directory brings its tokenizer)");
    const auto tok = opt.vocab.empty() ? models::load_tokenizer(opt.model) : models::open_tokenizer(opt.vocab);
    batches.push_back(sentence_batch(opt.sentences, *tok, opt.batch, opt.seq_len));
  } else {
    for (int i = 0; i < 4; ++i)
      batches.push_back(random_batch(opt.batch, opt.seq_len, config.at("vocab_size").get<size_t>(),
                                     config.value("type_vocab_size", size_t(2)), gen));
  }
  std::vector<size_t> tokens_of;  // real tokens per batch
  for (const Batch& b : batches) tokens_of.push_back(real_tokens(b.inputs));
  auto pass = [&](size_t i) {
    const models::ModelInputs& in = batches[i % batches.size()].inputs;
    return opt.first_token ? encoder.first_token_states(in) : encoder.forward_named(in).at("last_hidden_state");
  };
  MatmulPrecisionGuard timed_precision(opt.precision);
  std::unique_ptr<nn::InferenceWeights> packed;  // as bert_infer serves a model
  if (nn::packed_weights_enabled()) packed = std::make_unique<nn::InferenceWeights>(encoder, opt.precision);
  double max_diff = -1, mean_diff = -1;
  if (opt.precision != MatmulPrecision::FP32) {
    Tensor reference;
    {
      MatmulPrecisionGuard fp32(MatmulPrecision::FP32);
      reference = pass(0).contiguous();
    }
    const Tensor low = pass(0).contiguous();
    const float *r = reference.data(), *l = low.data();
    const models::ModelInputs& in = batches[0].inputs;
    const std::vector<float> real = in.attention_mask.defined() ? in.attention_mask.to_vector()
                                                                : std::vector<float>(in.batch() * in.seq_len(), 1.f);
    const size_t hidden = low.shape().back(), per_sequence = low.size(1), T = in.seq_len();
    double sum = 0;
    size_t compared = 0;  // values
    max_diff = 0;
    for (size_t i = 0; i < low.numel(); ++i) {
      // row i / hidden is position j of sequence b; with --first-token, its position 0
      const size_t b = i / hidden / per_sequence, j = opt.first_token ? 0 : i / hidden % per_sequence;
      if (real[b * T + j] == 0.f) continue;  // padding: zero on the fused path, unread on either
      ++compared;
      const double d = std::fabs(double(l[i]) - double(r[i]));
      max_diff = std::max(max_diff, d);
      sum += d;
    }
    mean_diff = sum / double(std::max<size_t>(1, compared));
  }
  pass(0);
  pass(1);
  const size_t n = std::max<size_t>(opt.steps, 1);
  size_t tokens = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    pass(i);
    tokens += tokens_of[i % batches.size()];
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BenchmarkResult r{double(tokens) / secs, secs / double(n), peak_rss_mb(), encoder.num_parameters(), max_diff, mean_diff};
  r.real_tokens = tokens_of[0];
  r.padded_tokens = batches[0].inputs.batch() * batches[0].inputs.seq_len();
  r.fused = nn::fused_inference_enabled();  // every family's encoder takes it (BERT, RoBERTa, ALBERT)
  return r;
}

}  // namespace xg::training
