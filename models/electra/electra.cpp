// The registered ELECTRA models: ElectraModel, ElectraForMaskedLM (the generator) and
// ElectraForPreTraining (the discriminator, with replaced-token detection).
#include "models/electra/electra.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/engine.hpp"
#include "autograd/parallel.hpp"
#include "util/strings.hpp"

namespace xg::models {

namespace {
// (B, T, H) rows -> (B * T, H) and back: the heads work on rows.
Tensor rows_of(const Tensor& x) { return reshape(x, {-1, long(x.size(x.dim() - 1))}); }
}  // namespace

ElectraPreTrainedModel::ElectraPreTrainedModel(const ElectraConfig& c, std::string base_prefix)
    : config(c), base_prefix_(std::move(base_prefix)) {
  c.validate();
}

nlohmann::json ElectraPreTrainedModel::family_config_json() const {
  nlohmann::json j = config.to_json();
  j.erase("generator");
  return j;
}

void ElectraPreTrainedModel::init_weights(Generator& gen) {
  nn::init::bert_init(*this, config.initializer_range, gen);
  apply([](nn::Module& m) {  // the LM head's bias is a bare parameter, not a Linear's
    if (auto* head = dynamic_cast<ElectraGeneratorLMHead*>(&m)) nn::init::zeros_(head->bias);
  });
}

std::string ElectraPreTrainedModel::name_from_checkpoint(const std::string& file_name) const {
  std::string n = file_name;
  // Buffers, and decoders tied to the word embeddings (the generator's, in either place).
  if (ends_with(n, "embeddings.position_ids") || ends_with(n, "embeddings.token_type_ids") ||
      ends_with(n, "generator_lm_head.weight"))
    return "";
  if (ends_with(n, "LayerNorm.gamma")) n.replace(n.size() - 5, 5, "weight");  // TF-era names
  else if (ends_with(n, "LayerNorm.beta")) n.replace(n.size() - 4, 4, "bias");
  if (is_head_tensor(n)) return n;  // heads sit beside "electra." 
  if (n.rfind("electra.", 0) == 0) n = n.substr(8);
  return base_prefix_ + n;
}

// Every architecture's heads, and a pre-training model's generator.
bool ElectraPreTrainedModel::is_head_tensor(const std::string& name) const {
  for (const char* head : {"discriminator_predictions.", "generator_predictions.", "generator_lm_head.", "generator.",
                           "classifier.", "qa_outputs.", "sequence_summary."})
    if (name.rfind(head, 0) == 0) return true;
  return false;
}

ElectraModel::ElectraModel(const ElectraConfig& c, std::shared_ptr<BertEmbeddings> shared_embeddings)
    : ElectraPreTrainedModel(c, "") {
  embeddings = register_module(
      "embeddings", shared_embeddings ? std::move(shared_embeddings) : std::make_shared<BertEmbeddings>(c.embedding_config()));
  if (c.embedding_size != c.hidden_size)
    embeddings_project = register_module("embeddings_project", std::make_shared<nn::Linear>(c.embedding_size, c.hidden_size));
  encoder = register_module("encoder", std::make_shared<nn::Encoder>(c.transformer_options(), c.num_hidden_layers));
}

void ElectraModel::share_encoder_of(PretrainedModel& other) {
  share_embeddings_and_encoder<ElectraModel>(other);
  if (!embeddings_project) return;
  embeddings_project = static_cast<ElectraModel&>(other.base_model()).embeddings_project;
  replace_module("embeddings_project", embeddings_project);
}

Tensor ElectraModel::forward(const ModelInputs& in) { return run(in, nullptr); }
Tensor ElectraModel::forward(const ModelInputs& in, const nn::OutputRows& rows) { return run(in, &rows); }

Tensor ElectraModel::first_token_states(const ModelInputs& in) {
  return forward(in, nn::OutputRows::first_tokens(in.batch(), in.seq_len()));
}

Tensor ElectraModel::run(const ModelInputs& in, const nn::OutputRows* rows) {
  in.validate(config.input_limits());
  const Tensor mask = in.attention_mask.defined() ? nn::additive_attention_mask(in.attention_mask) : Tensor();
  Tensor h = embeddings->forward(in);
  if (embeddings_project) h = embeddings_project->forward(h);
  return rows ? encoder->forward_rows(h, mask, *rows) : encoder->forward(h, mask);
}

NamedOutputs ElectraModel::forward_named(const ModelInputs& in, const Labels& labels) {
  check_label_names(labels, {}, kArchitecture);
  return {{"last_hidden_state", forward(in)}};
}

ElectraDiscriminatorPredictions::ElectraDiscriminatorPredictions(const ElectraConfig& c)
    : act(nn::activation_from_name(c.hidden_act)) {
  dense = register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.hidden_size));
  dense_prediction = register_module("dense_prediction", std::make_shared<nn::Linear>(c.hidden_size, 1));
}

Tensor ElectraDiscriminatorPredictions::forward(const Tensor& hidden) {
  const Tensor logits = dense_prediction->forward(nn::activate(dense->forward(rows_of(hidden)), act));
  return reshape(logits, {long(hidden.size(0)), long(hidden.size(1))});
}

// transformers' ElectraGeneratorPredictions uses GELU whatever hidden_act says.
ElectraGeneratorPredictions::ElectraGeneratorPredictions(const ElectraConfig& c) {
  layer_norm = register_module("LayerNorm", std::make_shared<nn::LayerNorm>(c.embedding_size, c.layer_norm_eps));
  dense = register_module("dense", std::make_shared<nn::Linear>(c.hidden_size, c.embedding_size));
}

Tensor ElectraGeneratorPredictions::forward(const Tensor& hidden) {
  return layer_norm->forward(nn::activate(dense->forward(hidden), nn::Activation::Gelu));
}

ElectraGeneratorLMHead::ElectraGeneratorLMHead(const ElectraConfig& c, Tensor tied) : decoder_weight(std::move(tied)) {
  bias = register_parameter("bias", Tensor::zeros({c.vocab_size}));
}

Tensor ElectraGeneratorLMHead::forward(const Tensor& x) { return linear(x, decoder_weight, bias); }

ElectraForMaskedLM::ElectraForMaskedLM(const ElectraConfig& c, std::shared_ptr<BertEmbeddings> shared_embeddings)
    : ElectraPreTrainedModel(c, "electra.") {
  electra = register_module("electra", std::make_shared<ElectraModel>(c, std::move(shared_embeddings)));
  generator_predictions = register_module("generator_predictions", std::make_shared<ElectraGeneratorPredictions>(c));
  generator_lm_head =
      register_module("generator_lm_head", std::make_shared<ElectraGeneratorLMHead>(c, electra->embeddings->word_embeddings->weight));
}

Tensor ElectraForMaskedLM::logits_of(const Tensor& hidden_rows) {
  return generator_lm_head->forward(generator_predictions->forward(hidden_rows));
}

PretrainingOutput ElectraForMaskedLM::forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) {
  check_pretraining_targets(in, t, SentenceTask::None, kArchitecture);
  const PretrainingRows rows = pretraining_rows(in, t);
  PretrainingOutput out;
  masked_lm_loss(electra->forward(in, rows.rows), rows.masked, t, [&](const Tensor& h) { return logits_of(rows_of(h)); }, out);
  return out;
}

NamedOutputs ElectraForMaskedLM::forward_named(const ModelInputs& in, const Labels& labels) {
  check_label_names(labels, {"labels"}, kArchitecture);
  const Tensor hidden = electra->forward(in);
  const Tensor logits = reshape(logits_of(rows_of(hidden)), {long(hidden.size(0)), long(hidden.size(1)), -1});
  NamedOutputs out{{"last_hidden_state", hidden}, {"logits", logits}};
  if (labels.count("labels")) out["loss"] = token_labels_loss(logits, labels.at("labels"));
  return out;
}

ElectraForPreTraining::ElectraForPreTraining(const ElectraConfig& c) : ElectraPreTrainedModel(c, "electra.") {
  electra = register_module("electra", std::make_shared<ElectraModel>(c));
  discriminator_predictions = register_module("discriminator_predictions", std::make_shared<ElectraDiscriminatorPredictions>(c));
  if (c.generator)  // registered after the discriminator: the shared embeddings keep its names
    generator = register_module("generator", std::make_shared<ElectraForMaskedLM>(c.generator_config(), electra->embeddings));
}

nlohmann::json ElectraForPreTraining::family_config_json() const {
  return generator ? config.to_json() : ElectraPreTrainedModel::family_config_json();
}

void ElectraForPreTraining::set_checkpoint_activations(bool on) {
  electra->encoder->checkpoint_activations = on;
  if (generator) generator->set_checkpoint_activations(on);
}

Tensor ElectraForPreTraining::forward(const ModelInputs& in) { return discriminator_predictions->forward(electra->forward(in)); }

namespace {
// The flat indices of the real tokens (attention_mask 1; all without a mask).
std::vector<int64_t> real_positions(const ModelInputs& in) {
  const size_t n = in.batch() * in.seq_len();
  std::vector<int64_t> real;
  real.reserve(n);
  if (!in.attention_mask.defined()) {
    for (size_t i = 0; i < n; ++i) real.push_back(int64_t(i));
    return real;
  }
  const std::vector<float> mask = in.attention_mask.to_vector();
  for (size_t i = 0; i < n; ++i)
    if (mask[i] == 1.f) real.push_back(int64_t(i));
  return real;
}

// Binary cross-entropy of (B, T) logits at `positions` against 0/1 `targets` there; 0 (reaching
// every logit with a zero gradient) when there are none, where a mean would be 0/0.
Tensor replaced_token_loss(const Tensor& logits, const std::vector<int64_t>& positions, const std::vector<float>& targets) {
  if (positions.empty()) return sum(logits) * 0.f;
  const Tensor at = index_select(reshape(logits, {-1}), 0, positions);
  return bce_with_logits(at, Tensor::from_vector(targets, {targets.size()}));
}
}  // namespace

NamedOutputs ElectraForPreTraining::forward_named(const ModelInputs& in, const Labels& labels) {
  check_label_names(labels, {"labels"}, kArchitecture);
  const Tensor hidden = electra->forward(in);
  NamedOutputs out{{"last_hidden_state", hidden}, {"logits", discriminator_predictions->forward(hidden)}};
  if (!labels.count("labels")) return out;
  const Tensor& l = labels.at("labels");
  if (l.numel() != in.batch() * in.seq_len())
    throw std::invalid_argument(fmt::format("[{}] labels must be {} x {} values (1 = replaced, 0 = original), got {}",
                                            kArchitecture, in.batch(), in.seq_len(), l.numel()));
  // as transformers' labels.float(): int64 or float labels
  std::vector<float> all;
  if (l.dtype() == Dtype::Int64)
    for (int64_t v : l.to_ints()) all.push_back(float(v));
  else
    all = l.to_vector();
  const std::vector<int64_t> real = real_positions(in);
  std::vector<float> targets;
  for (int64_t p : real) {
    const float v = all[size_t(p)];
    if (v != 0.f && v != 1.f)
      throw std::invalid_argument(fmt::format("[{}] labels hold {} at position {}: 1 (replaced) or 0 (original) only",
                                              kArchitecture, v, p));
    targets.push_back(v);
  }
  out["loss"] = replaced_token_loss(out["logits"], real, targets);
  return out;
}

std::vector<int64_t> sample_from_logits(const Tensor& logits, const std::vector<double>& u) {
  const Tensor c = logits.contiguous();
  const size_t V = c.size(-1), N = c.numel() / V;
  if (u.size() != N)
    throw std::invalid_argument(fmt::format("[sample_from_logits] {} uniforms for {} rows of logits", u.size(), N));
  const float* x = c.data();
  std::vector<int64_t> out(N);
  parallel_rows(N, V, [&](size_t r0, size_t r1) {
    std::vector<float> p(V);
    for (size_t r = r0; r < r1; ++r) {
      const float* row = x + r * V;
      const float top = *std::max_element(row, row + V);
      double total = 0;
      for (size_t j = 0; j < V; ++j) total += p[j] = std::exp(row[j] - top);
      // the first token whose cumulative probability passes u: inverse-CDF sampling
      const double target = u[r] * total;
      double cumulative = 0;
      size_t j = 0;
      while (j + 1 < V && (cumulative += p[j]) <= target) ++j;
      out[r] = int64_t(j);
    }
  });
  return out;
}

std::vector<double> masked_position_uniforms(const PretrainingTargets& t, size_t seq_len) {
  const Tensor positions = t.masked_positions.contiguous();
  const int64_t* p = positions.data_as<int64_t>();
  std::vector<double> u(positions.numel());
  for (size_t i = 0; i < u.size(); ++i) {
    const uint64_t sequence = t.first_sequence + uint64_t(p[i]) / seq_len, position = uint64_t(p[i]) % seq_len;
    Generator rng(t.sample_seed ^ (sequence * 0x9E3779B97F4A7C15ULL) ^ (position * 0xC2B2AE3D27D4EB4FULL));
    u[i] = rng.uniform();
  }
  return u;
}

void ElectraForPreTraining::check_can_pretrain() const {
  if (generator) return;
  throw std::invalid_argument(fmt::format("[{}] replaced-token detection needs a generator, and config.json has no "
                                          "\"generator\" sizes (a Hugging Face discriminator checkpoint has none: give it "
                                          "one, e.g. {{\"hidden_size\": {}, \"num_attention_heads\": {}, "
                                          "\"intermediate_size\": {}, \"num_hidden_layers\": {}}})",
                                          kArchitecture, config.hidden_size / 4, std::max<size_t>(1, config.num_attention_heads / 4),
                                          config.intermediate_size / 4, config.num_hidden_layers));
}

PretrainingOutput ElectraForPreTraining::forward_pretraining(const ModelInputs& in, const PretrainingTargets& t) {
  check_pretraining_targets(in, t, SentenceTask::None, kArchitecture);
  check_can_pretrain();
  PretrainingOutput out = generator->forward_pretraining(in, t);  // the generator's MLM
  const size_t B = in.batch(), T = in.seq_len();
  // values only: no gradient flows through a sample
  const std::vector<int64_t> sampled = sample_from_logits(out.mlm_logits, masked_position_uniforms(t, T));
  std::vector<int64_t> corrupted = in.input_ids.to_ints();
  std::vector<float> replaced(B * T, 0.f);
  const std::vector<int64_t> positions = t.masked_positions.to_ints(), originals = t.masked_labels.to_ints();
  for (size_t i = 0; i < sampled.size(); ++i) {
    corrupted[size_t(positions[i])] = sampled[i];
    replaced[size_t(positions[i])] = sampled[i] != originals[i] ? 1.f : 0.f;
  }
  ModelInputs d = in;
  d.input_ids = Tensor::from_ints(corrupted, {B, T});
  const Tensor logits = forward(d);
  const std::vector<int64_t> real = real_positions(in);
  std::vector<float> targets;
  targets.reserve(real.size());
  for (int64_t p : real) targets.push_back(replaced[size_t(p)]);
  out.replaced_loss = replaced_token_loss(logits, real, targets);
  out.loss = add(out.mlm_loss, out.replaced_loss * kDiscriminatorWeight);
  const std::vector<float> l = logits.to_vector();
  out.tokens = real.size();
  for (size_t i = 0; i < real.size(); ++i) {
    const bool predicted = l[size_t(real[i])] > 0.f, actual = targets[i] == 1.f;
    out.tokens_correct += predicted == actual;
    out.replaced += actual;
    out.predicted_replaced += predicted;
    out.replaced_found += predicted && actual;
  }
  return out;
}

}  // namespace xg::models
