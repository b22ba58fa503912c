#include "inference/benchmark.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/parallel.hpp"
#include "models/core/checkpoint.hpp"
#include "models/core/family_tokenizer.hpp"
#include "models/core/memory_estimate.hpp"
#include "models/core/model_spec.hpp"
#include "models/core/registry.hpp"
#include "nn/fused_encoder.hpp"
#include "nn/packed_weights.hpp"
#include "util/lines.hpp"

namespace xg::inference {

double peak_rss_mb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

namespace {

// The first `count` non-empty lines of `path`, tokenized with special tokens, cut to seq_len and
// padded to the longest.
models::ModelInputs sentence_inputs(const std::string& path, const text::Tokenizer& tok, size_t count, size_t seq_len) {
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
    throw std::runtime_error(fmt::format("[bert_infer bench] --sentences {} has {} non-empty lines, fewer than --batch-size {}",
                                         path, sequences.size(), count));
  return models::pad_sequences(sequences, tok.pad_id());
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
    owner = models::build_model(models::fresh_model_config(opt.model, 0, -1, -1, -1, opt.seq_len), opt.model);
    owner->init_weights(gen);
  }
  models::PretrainedModel& encoder = owner->base_model();
  const nlohmann::json config = encoder.family_config_json();  // the inputs check --max-seq-length against its positions
  models::refuse_if_too_big(models::inference_memory(config, opt.batch, opt.seq_len), config, "inference",
                            fmt::format("--batch-size {} x --max-seq-length {}", opt.batch, opt.seq_len));
  encoder.eval();
  NoGradGuard no_grad;
  std::vector<models::ModelInputs> batches;
  if (!opt.sentences.empty()) {
    if (opt.vocab.empty() && !from_dir)
      throw std::invalid_argument("[bert_infer bench] --sentences needs --tokenizer with a preset --model (a checkpoint directory brings its tokenizer)");
    const auto tok = opt.vocab.empty() ? models::load_tokenizer(opt.model) : models::open_tokenizer(opt.vocab);
    batches.push_back(sentence_inputs(opt.sentences, *tok, opt.batch, opt.seq_len));
  } else {
    for (int i = 0; i < 4; ++i)
      batches.push_back(models::random_inputs(opt.batch, opt.seq_len, config.at("vocab_size").get<size_t>(),
                                              config.value("type_vocab_size", size_t(2)), gen));
  }
  std::vector<size_t> tokens_of;  // real tokens per batch
  for (const models::ModelInputs& b : batches) tokens_of.push_back(real_tokens(b));
  auto pass = [&](size_t i) {
    const models::ModelInputs& in = batches[i % batches.size()];
    return opt.first_token ? encoder.first_token_states(in) : encoder.forward_named(in).at("last_hidden_state");
  };
  MatmulPrecisionGuard timed_precision(opt.precision);
  std::unique_ptr<nn::InferenceWeights> packed;  // as bert_infer serves a model
  if (nn::serving_packs_weights(encoder, opt.precision)) packed = std::make_unique<nn::InferenceWeights>(encoder, opt.precision);
  double max_diff = -1, mean_diff = -1;
  if (opt.precision != MatmulPrecision::FP32) {
    Tensor reference;
    {
      MatmulPrecisionGuard fp32(MatmulPrecision::FP32);
      reference = pass(0).contiguous();
    }
    const Tensor low = pass(0).contiguous();
    const float *r = reference.data(), *l = low.data();
    const models::ModelInputs& in = batches[0];
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
  r.padded_tokens = batches[0].batch() * batches[0].seq_len();
  r.fused = encoder.execution().fused_inference;  // every family's encoder takes it (BERT, RoBERTa, ALBERT)
  return r;
}

}  // namespace xg::inference
