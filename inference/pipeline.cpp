#include "inference/pipeline.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "inference/qa.hpp"
#include "models/core/family_tokenizer.hpp"
#include "models/core/registry.hpp"
#include "util/checksums.hpp"
#include "util/strings.hpp"

namespace xg::inference {

namespace {

// Said before anything tries a file inside it (which would blame a missing config.json).
void require_directory(const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    throw std::invalid_argument(fmt::format("{}: {}", dir, std::filesystem::exists(dir) ? "not a directory" : "no such directory"));
}

std::string text_number(size_t i) { return fmt::format("text {}", i + 1); }

// Probabilities of one row of logits, most likely first, the top k.
std::vector<LabelScore> label_scores(const float* logits, const models::HeadConfig& head, size_t top_k) {
  const size_t n = head.num_labels();
  if (head.is_regression()) return {{head.id2label[0], double(logits[0])}};
  std::vector<double> p(n);
  if (head.problem_type == "multi_label_classification") {
    for (size_t i = 0; i < n; ++i) p[i] = 1.0 / (1.0 + std::exp(-double(logits[i])));
  } else {
    const double top = *std::max_element(logits, logits + n);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += p[i] = std::exp(double(logits[i]) - top);
    for (auto& v : p) v /= sum;
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p[x] > p[y]; });
  std::vector<LabelScore> out;
  for (size_t i = 0; i < std::min(top_k, n); ++i) out.push_back({head.id2label[order[i]], p[order[i]]});
  return out;
}

// Masked-LM logits (B, T, V): "logits" of a ...ForMaskedLM, "prediction_logits" of a ...ForPreTraining.
Tensor vocabulary_logits(const models::NamedOutputs& out, const std::string& architecture) {
  for (const char* name : {"logits", "prediction_logits"})
    if (auto it = out.find(name); it != out.end() && it->second.dim() == 3) return it->second;
  throw std::invalid_argument(fmt::format("[Pipeline] fill_mask: a {} has no language-model head", architecture));
}

// `run(first, count)` over [0, n) in slices of `batch`.
template <class Run>
void in_batches(size_t n, size_t batch, Run run) {
  for (size_t first = 0; first < n; first += batch) run(first, std::min(batch, n - first));
}

}  // namespace

Pipeline Pipeline::load(const std::string& given, const PipelineOptions& options) {
  std::string note;  // a run's output directory stands for its best model or newest checkpoint
  const std::string dir = models::model_directory_in(given, &note);
  require_directory(dir);
  std::unique_ptr<text::Tokenizer> tokenizer;
  if (options.tokenizer.empty()) {
    tokenizer = models::load_tokenizer(dir);
  } else {
    text::TokenizerOptions o;
    o.lowercase = !options.cased;
    tokenizer = models::open_tokenizer(options.tokenizer, o);
  }
  if (options.verify_checksums) verify_checksums(dir);  // a checkpoint written by the Trainer lists its files' CRC32C
  models::LoadedModel loaded = models::load_pretrained(dir);
  if (!note.empty()) loaded.notes.insert(loaded.notes.begin(), note);
  return Pipeline(std::move(loaded), std::move(tokenizer), options, dir);
}

Pipeline::Pipeline(models::LoadedModel loaded, std::unique_ptr<text::Tokenizer> tokenizer, const PipelineOptions& options,
                   const std::string& name)
    : loaded_(std::move(loaded)), tokenizer_(std::move(tokenizer)), options_(options), name_(name) {
  if (!loaded_.model || !tokenizer_) throw std::invalid_argument(fmt::format("[Pipeline] {}: no model or no tokenizer", name_));
  set_batch(options_.batch);
  // Found before any output: ids past the model's vocab_size have no embedding.
  const auto& config = model().config_json();
  if (config.contains("vocab_size") && config.at("vocab_size").is_number_unsigned() &&
      tokenizer_->vocab_size() > config.at("vocab_size").get<size_t>())
    throw std::invalid_argument(fmt::format("{}: config.json vocab_size is {}, but the tokenizer has {} tokens", name_,
                                            config.at("vocab_size").get<size_t>(), tokenizer_->vocab_size()));
  // A family whose positions follow padding numbers them past pad_token_id over the ids that are
  // not it: padding with another id would give padded positions real ones.
  if (models::family_entry(model().model_type()).positions_follow_padding && config.contains("pad_token_id") &&
      config.at("pad_token_id").is_number_integer() && int64_t(tokenizer_->pad_id()) != config.at("pad_token_id").get<int64_t>())
    throw std::invalid_argument(fmt::format("{}: config.json pad_token_id is {}, but the tokenizer pads with id {} ({})", name_,
                                            config.at("pad_token_id").get<int64_t>(), tokenizer_->pad_id(),
                                            tokenizer_->special_tokens().pad));
  // A head the checkpoint lacks would be random: its answers would look like a model's and mean nothing.
  if (!loaded_.newly_initialised.empty())
    throw std::invalid_argument(fmt::format("{}: the checkpoint has no weights for {} of its {} ({}): a random head would answer; "
                                            "fine-tune it first (bert_finetune)", name_, loaded_.newly_initialised.size() == 1 ? "a tensor" : "tensors",
                                            model().architecture(), fmt::join(loaded_.newly_initialised, ", ")));
  const size_t positions = config.value("max_position_embeddings", size_t(512));
  const size_t skipped = models::first_position(config);
  max_tokens_ = positions > skipped ? positions - skipped : 0;
  if (options_.max_length > 0) max_tokens_ = std::min(max_tokens_, options_.max_length);
  model().eval();
  if (nn::serving_packs_weights(model(), options_.precision))
    packed_weights_ = std::make_unique<nn::InferenceWeights>(model(), options_.precision);
}

void Pipeline::set_batch(size_t batch) {
  if (batch == 0) throw std::invalid_argument("[Pipeline] batch must be at least 1");
  options_.batch = batch;
}

void Pipeline::require_head(const std::string& suffix, const std::string& what) const {
  const std::string architecture = model().architecture();
  if (!ends_with(architecture, suffix))
    throw std::invalid_argument(fmt::format("{}: a {}, not {}", name_, architecture, what));
}

models::HeadConfig Pipeline::head_config() const {
  return models::HeadConfig::from_json(model().config_json(), name_ + "/config.json");
}

std::vector<std::vector<LabelScore>> Pipeline::classify_encoded(const std::vector<models::Sequence>& inputs, size_t top_k) const {
  require_head("ForSequenceClassification", "a sequence classifier (*ForSequenceClassification)");
  const models::HeadConfig head = head_config();
  MatmulPrecisionGuard precision(options_.precision);
  NoGradGuard no_grad;
  std::vector<std::vector<LabelScore>> out;
  in_batches(inputs.size(), options_.batch, [&](size_t first, size_t count) {
    const std::vector<models::Sequence> batch(inputs.begin() + long(first), inputs.begin() + long(first + count));
    const std::vector<float> rows = model().forward_named(models::pad_sequences(batch, tokenizer_->pad_id())).at("logits").to_vector();
    for (size_t b = 0; b < count; ++b) out.push_back(label_scores(rows.data() + b * head.num_labels(), head, top_k));
  });
  return out;
}

std::vector<LabelScore> Pipeline::classify(const std::string& text, size_t top_k) const {
  return classify(std::vector<std::string>{text}, top_k).front();
}

std::vector<std::vector<LabelScore>> Pipeline::classify(const std::vector<std::string>& texts, size_t top_k) const {
  std::vector<models::Sequence> inputs;
  text::EncodeOptions eo;
  eo.max_length = max_tokens_;
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      const text::Encoding e = tokenizer_->encode(texts[i], eo);
      inputs.push_back({{e.ids.begin(), e.ids.end()}, {e.type_ids.begin(), e.type_ids.end()}});
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("[Pipeline] classify, {}: {}", text_number(i), e.what()));
    }
  }
  return classify_encoded(inputs, top_k);
}

std::vector<std::vector<LabelScore>> Pipeline::classify_pairs(const std::vector<std::pair<std::string, std::string>>& pairs,
                                                              size_t top_k) const {
  std::vector<models::Sequence> inputs;
  text::EncodeOptions eo;
  eo.max_length = max_tokens_;
  for (size_t i = 0; i < pairs.size(); ++i) {
    try {
      const text::Encoding e = tokenizer_->encode_pair(pairs[i].first, pairs[i].second, eo);
      inputs.push_back({{e.ids.begin(), e.ids.end()}, {e.type_ids.begin(), e.type_ids.end()}});
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("[Pipeline] classify_pairs, pair {}: {}", i + 1, e.what()));
    }
  }
  return classify_encoded(inputs, top_k);
}

std::vector<FoundEntity> Pipeline::entities(const std::string& text) const {
  return entities(std::vector<std::string>{text}).front();
}

std::vector<std::vector<FoundEntity>> Pipeline::entities(const std::vector<std::string>& texts, text::WordAlignOptions align,
                                                         const std::function<std::string(size_t)>& where) const {
  require_head("ForTokenClassification", "a token classifier (*ForTokenClassification)");
  const auto id2label = head_config().id2label;
  align.max_len = std::min(align.max_len, max_tokens_);
  MatmulPrecisionGuard precision(options_.precision);
  NoGradGuard no_grad;
  const auto forward = [&](const models::ModelInputs& in) { return model().forward_named(in).at("logits"); };
  return tag_texts(texts, *tokenizer_, id2label, align, options_.batch, forward,
                   where ? where : std::function<std::string(size_t)>(text_number));
}

text::SquadPrediction Pipeline::answer(const std::string& question, const std::string& context,
                                       const text::SquadDecodeOptions& options) const {
  text::SquadQuestion q;
  q.id = "0";
  q.question = question;
  q.context = std::make_shared<const std::string>(context);
  return answer(std::vector<text::SquadQuestion>{q}, options).front();
}

std::vector<text::SquadPrediction> Pipeline::answer(const std::vector<text::SquadQuestion>& questions,
                                                    const text::SquadDecodeOptions& options,
                                                    text::SquadFeatureOptions features) const {
  require_head("ForQuestionAnswering", "a question-answering model (*ForQuestionAnswering)");
  if (questions.empty()) return {};
  features.max_len = std::min<size_t>(features.max_len == 0 ? 384 : features.max_len, max_tokens_);  // run_qa's max_seq_length
  if (features.doc_stride == 0) features.doc_stride = features.max_len / 3;
  MatmulPrecisionGuard precision(options_.precision);
  NoGradGuard no_grad;
  const auto windows = text::squad_features(questions, *tokenizer_, features);
  const auto logits = span_logits(model(), windows, tokenizer_->pad_id(), options_.batch);
  return text::decode_squad_answers(questions, windows, logits, options);
}

std::vector<std::vector<MaskFill>> Pipeline::fill_mask(const std::string& text, size_t top_k) const {
  return fill_mask(std::vector<std::string>{text}, top_k, [](size_t) { return std::string("[Pipeline] fill_mask"); }).front();
}

std::vector<std::vector<std::vector<MaskFill>>> Pipeline::fill_mask(const std::vector<std::string>& texts, size_t top_k,
                                                                    const std::function<std::string(size_t)>& where) const {
  const auto name = [&](size_t i) { return where ? where(i) : "[Pipeline] fill_mask, " + text_number(i); };
  std::vector<text::Encoding> encoded;
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      encoded.push_back(tokenizer_->encode(texts[i]));
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("{}: {}", name(i), e.what()));
    }
    const auto& ids = encoded.back().ids;
    if (std::find(ids.begin(), ids.end(), tokenizer_->mask_id()) == ids.end())
      throw std::invalid_argument(fmt::format("{}: the text has no {}", name(i), tokenizer_->special_tokens().mask));
    if (ids.size() > max_tokens_)
      throw std::invalid_argument(fmt::format("{}: the text has {} tokens, more than the {} the model's positions hold", name(i),
                                              ids.size(), max_tokens_));
  }
  MatmulPrecisionGuard precision(options_.precision);
  NoGradGuard no_grad;
  std::vector<std::vector<std::vector<MaskFill>>> out;
  in_batches(encoded.size(), options_.batch, [&](size_t first, size_t count) {
    std::vector<models::Sequence> sequences;
    for (size_t b = first; b < first + count; ++b) sequences.push_back({{encoded[b].ids.begin(), encoded[b].ids.end()}, {}});
    const models::ModelInputs in = models::pad_sequences(sequences, tokenizer_->pad_id());
    const Tensor logits = vocabulary_logits(model().forward_named(in), model().architecture());
    const size_t T = in.seq_len(), V = logits.size(-1);
    const Tensor rows = reshape(logits, {long(count * T), long(V)});
    // Candidates are the tokenizer's tokens: a config.json may pad vocab_size past them.
    const size_t candidates_of = std::min(V, tokenizer_->vocab_size());
    for (size_t b = 0; b < count; ++b) {
      const auto& ids = encoded[first + b].ids;
      std::vector<std::vector<MaskFill>> masks;
      for (size_t t = 0; t < ids.size(); ++t) {
        if (ids[t] != tokenizer_->mask_id()) continue;
        const Tensor probs = softmax(slice(rows, 0, long(b * T + t), long(b * T + t) + 1));
        std::vector<int32_t> order(candidates_of);
        for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
        const size_t k = std::min(top_k, order.size());
        std::partial_sort(order.begin(), order.begin() + long(k), order.end(),
                          [&](int32_t x, int32_t y) { return probs.data()[x] > probs.data()[y]; });
        std::vector<MaskFill> candidates;
        for (size_t i = 0; i < k; ++i) {
          std::vector<int32_t> filled(ids.begin(), ids.end());
          filled[t] = order[i];
          candidates.push_back({order[i], t, tokenizer_->id_to_token(order[i]), tokenizer_->decode(filled), probs.data()[order[i]]});
        }
        masks.push_back(std::move(candidates));
      }
      out.push_back(std::move(masks));
    }
  });
  return out;
}

std::vector<std::vector<float>> Pipeline::embed(const std::vector<std::string>& texts, models::Pooling pooling, bool normalize,
                                                const std::function<std::string(size_t)>& where) const {
  text::EncodeOptions eo;
  eo.max_length = max_tokens_;
  std::vector<text::Encoding> encoded;
  try {
    encoded = tokenizer_->encode_batch(texts, eo);  // on every thread
  } catch (const std::exception&) {  // find the text to name
    for (size_t i = 0; i < texts.size(); ++i) try {
        tokenizer_->encode(texts[i], eo);
      } catch (const std::exception& e) {
        throw std::invalid_argument(fmt::format("{}: {}", where ? where(i) : "[Pipeline] embed, " + text_number(i), e.what()));
      }
    throw;
  }
  std::vector<models::Sequence> sequences;
  for (const auto& e : encoded) sequences.push_back({{e.ids.begin(), e.ids.end()}, {}});
  return embed_encoded(sequences, pooling, normalize);
}

std::vector<std::vector<float>> Pipeline::embed_encoded(const std::vector<models::Sequence>& inputs, models::Pooling pooling,
                                                        bool normalize) const {
  std::vector<std::vector<float>> out;
  MatmulPrecisionGuard precision(options_.precision);
  NoGradGuard no_grad;
  in_batches(inputs.size(), options_.batch, [&](size_t first, size_t count) {
    const std::vector<models::Sequence> batch(inputs.begin() + long(first), inputs.begin() + long(first + count));
    const models::ModelInputs in = models::pad_sequences(batch, tokenizer_->pad_id());
    const Tensor h = model().base_model().forward_named(in).at("last_hidden_state");  // no head needed
    const Tensor pooled = models::pool_sentences(h, in.attention_mask, pooling, normalize);
    const size_t H = pooled.size(1);
    for (size_t b = 0; b < count; ++b) out.emplace_back(pooled.data() + b * H, pooled.data() + (b + 1) * H);
  });
  return out;
}

}  // namespace xg::inference
