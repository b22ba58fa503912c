#include "serve/endpoints.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "serve/http_error.hpp"
#include "serve/request_json.hpp"
#include "util/json_input.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

namespace xg::serve {

namespace {

using nlohmann::json;

// One forward pass takes the whole batch: the batcher has sized it.
constexpr size_t kWholeBatch = size_t(1) << 30;

std::string field_at(const std::string& field, size_t i, bool batched) {
  return batched ? fmt::format("{}[{}]", field, i) : field;
}

models::Sequence sequence_of(const text::Encoding& e) {
  return {{e.ids.begin(), e.ids.end()}, {e.type_ids.begin(), e.type_ids.end()}};
}

// A job whose requests are `Input`s and answers `Output`s; `run` maps all inputs of a batch to
// their outputs at once, and the batch's outputs are dealt back to the jobs in order.
template <class Input, class Output>
struct BatchedJob : ModelJob {
  std::vector<Input> inputs;
  std::vector<Output> outputs;
  bool batched = false;  // an array was sent: answer an array
  std::function<std::string(const BatchedJob&)> write;
  std::string answer() const override { return write(*this); }

  // A runner for jobs of this type: `run(all inputs)` -> all outputs.
  static std::function<void(const std::vector<Job*>&)> runner(std::function<std::vector<Output>(const std::vector<Input>&)> run) {
    return [run](const std::vector<Job*>& jobs) {
      std::vector<Input> all;
      for (Job* j : jobs) {
        const auto& in = static_cast<BatchedJob*>(j)->inputs;
        all.insert(all.end(), in.begin(), in.end());
      }
      std::vector<Output> out = run(all);
      if (out.size() != all.size()) throw std::logic_error("a batch's runner returned another number of outputs than inputs");
      size_t next = 0;
      for (Job* j : jobs) {
        auto* job = static_cast<BatchedJob*>(j);
        job->outputs.assign(std::make_move_iterator(out.begin() + long(next)),
                            std::make_move_iterator(out.begin() + long(next + job->inputs.size())));
        next += job->inputs.size();
      }
    };
  }
};

// An answer per input: one when a single value was sent, an array of them when an array was.
template <class Job, class Write>
json one_or_array(const Job& job, Write write) {
  if (!job.batched) return write(job.outputs.front());
  json out = json::array();
  for (const auto& o : job.outputs) out.push_back(write(o));
  return out;
}

json label_scores_json(const std::vector<inference::LabelScore>& labels) {
  json out = json::array();
  for (const auto& l : labels) out.push_back({{"label", l.label}, {"score", l.score}});
  return out;
}

models::Pooling pooling_in(const std::string& model_dir) {
  const std::filesystem::path config = std::filesystem::path(model_dir) / "1_Pooling" / "config.json";
  if (!std::filesystem::is_regular_file(config)) return models::Pooling::Cls;
  std::ifstream in(config);
  const json c = parse_json_bounded(in);
  if (c.value("pooling_mode_mean_tokens", false)) return models::Pooling::Mean;
  if (c.value("pooling_mode_cls_token", false)) return models::Pooling::Cls;
  throw std::invalid_argument(fmt::format("{}: neither pooling_mode_mean_tokens nor pooling_mode_cls_token is set; "
                                          "the server pools by the mean or the first token", config.string()));
}

const char* pooling_name(models::Pooling p) { return p == models::Pooling::Mean ? "mean" : "cls"; }

// The head an architecture ends in: "sequence-classification", ..., or "none".
std::string head_of(const std::string& architecture) {
  for (const auto& [suffix, name] : std::vector<std::pair<std::string, std::string>>{
           {"ForSequenceClassification", "sequence-classification"},
           {"ForTokenClassification", "token-classification"},
           {"ForQuestionAnswering", "question-answering"},
           {"ForMaskedLM", "masked-lm"},
           {"ForPreTraining", "pre-training"},
           {"ForMultipleChoice", "multiple-choice"}})
    if (ends_with(architecture, suffix)) return name;
  return "none";
}

// The model endpoints a head has.
std::vector<std::string> endpoints_of(const std::string& head) {
  std::vector<std::string> out;
  for (const std::string& path : kModelEndpoints)
    if ((path != "/classify" || head == "sequence-classification") && (path != "/ner" || head == "token-classification") &&
        (path != "/qa" || head == "question-answering") && (path != "/fill-mask" || head == "masked-lm" || head == "pre-training"))
      out.push_back(path);
  return out;
}

}  // namespace

Endpoints::Endpoints(inference::Pipeline& pipeline, const RequestLimits& limits, const std::string& model_dir)
    : pipeline_(pipeline), limits_(limits), default_pooling_(pooling_in(model_dir)),
      head_(head_of(pipeline.model().architecture())), available_(endpoints_of(head_)) {
  text::EncodeOptions plain;
  plain.add_special_tokens = false;
  const auto& tok = pipeline_.tokenizer();
  const size_t a = tok.encode("a", plain).size();
  pair_special_tokens_ = tok.encode_pair("a", "a").size() - 2 * a;
  pipeline_.set_batch(kWholeBatch);
}

json Endpoints::info(const std::string& model_name, const std::string& precision, size_t max_batch_tokens) const {
  json labels = json::array();
  if (head() == "sequence-classification" || head() == "token-classification")
    for (const auto& l : pipeline_.head_config().id2label) labels.push_back(l);
  return {{"model_id", model_name},
          {"family", pipeline_.model().model_type()},
          {"architecture", pipeline_.model().architecture()},
          {"head", head()},
          {"labels", labels},
          {"endpoints", available()},
          {"max_input_length", pipeline_.max_tokens()},
          {"max_client_batch_size", limits_.max_inputs},
          {"max_batch_tokens", max_batch_tokens},
          {"precision", precision},
          {"pooling", pooling_name(default_pooling_)},
          {"version", XGRAD_VERSION}};
}

void Endpoints::check_count(size_t count, const std::string& field) const {
  if (count > limits_.max_inputs)
    throw HttpError(413, fmt::format("{}: {} texts, more than the {} one request may hold; send them in several requests",
                                     field, count, limits_.max_inputs));
}

void Endpoints::check_texts(const std::vector<std::string>& texts, const std::string& field, bool batched) const {
  check_count(texts.size(), field);
  for (size_t i = 0; i < texts.size(); ++i)
    if (texts[i].size() > limits_.max_text_bytes)
      throw HttpError(413, fmt::format("{}: {} bytes, more than the {} a text may have", field_at(field, i, batched),
                                       texts[i].size(), limits_.max_text_bytes));
}

text::Encoding Endpoints::encode(const std::string& text, const std::string& field, bool truncate, bool special_tokens,
                                 const std::string* text_pair) const {
  text::EncodeOptions eo;
  eo.add_special_tokens = special_tokens;
  if (truncate) eo.max_length = pipeline_.max_tokens();
  text::Encoding e;
  try {
    e = text_pair ? pipeline_.tokenizer().encode_pair(text, *text_pair, eo) : pipeline_.tokenizer().encode(text, eo);
  } catch (const std::exception& ex) {
    throw HttpError(400, fmt::format("{}: {}", field, ex.what()));
  }
  if (special_tokens && e.size() > pipeline_.max_tokens())
    throw HttpError(422, fmt::format("{}: {} tokens, more than the {} the model takes; send \"truncate\": true to cut it",
                                     field, e.size(), pipeline_.max_tokens()));
  return e;
}

void Endpoints::require_available(const std::string& path) const {
  const auto have = available();
  if (std::find(have.begin(), have.end(), path) == have.end())
    throw HttpError(404, fmt::format("{}: this model ({}) has no head for it; its endpoints: {}", path,
                                     pipeline_.model().architecture(), fmt::join(have, " ")));
}

void Endpoints::check_tokens(size_t tokens) const {
  if (tokens > limits_.max_request_tokens)
    throw HttpError(413, fmt::format("inputs: {} tokens, more than the {} one request may hold (--max-request-tokens); "
                                     "send them in several requests", tokens, limits_.max_request_tokens));
}

size_t Endpoints::count_tokens(const std::string& text, const std::string& field) const {
  return encode(text, field, /*truncate=*/false, /*special_tokens=*/false).size();
}

std::shared_ptr<ModelJob> Endpoints::prepare(const std::string& path, const json& body) const {
  require_available(path);
  if (path == "/embed") return embed(body);
  if (path == "/classify") return classify(body);
  if (path == "/ner") return ner(body);
  if (path == "/qa") return qa(body);
  if (path == "/fill-mask") return fill_mask(body);
  return tokenize(body);
}

std::shared_ptr<ModelJob> Endpoints::embed(const json& body) const {
  refuse_unknown_fields(body, {"inputs", "normalize", "pooling", "truncate"});
  using EmbedJob = BatchedJob<models::Sequence, std::vector<float>>;
  auto job = std::make_shared<EmbedJob>();
  const auto texts = texts_field(body, "inputs", &job->batched);
  check_texts(texts, "inputs", job->batched);
  const bool normalize = bool_field(body, "normalize").value_or(true);
  const bool truncate = bool_field(body, "truncate").value_or(false);
  models::Pooling pooling = default_pooling_;
  if (const auto name = string_field(body, "pooling")) {
    if (*name != "mean" && *name != "cls") throw HttpError(400, fmt::format("pooling: expected \"mean\" or \"cls\", got \"{}\"", *name));
    pooling = models::pooling_from_name(*name);
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    job->inputs.push_back(sequence_of(encode(texts[i], field_at("inputs", i, job->batched), truncate)));
    job->tokens += job->inputs.back().ids.size();
  }
  check_tokens(job->tokens);
  job->sequences = texts.size();
  job->group = fmt::format("/embed {} {}", pooling_name(pooling), normalize ? "normalized" : "raw");
  job->run_batch = EmbedJob::runner([this, pooling, normalize](const std::vector<models::Sequence>& all) {
    return pipeline_.embed_encoded(all, pooling, normalize);
  });
  job->write = [](const EmbedJob& j) { return float_rows_json(j.outputs); };  // always an array of vectors, as TEI's /embed
  return job;
}

std::shared_ptr<ModelJob> Endpoints::classify(const json& body) const {
  refuse_unknown_fields(body, {"inputs", "top_k", "truncate"});
  using ClassifyJob = BatchedJob<models::Sequence, std::vector<inference::LabelScore>>;
  auto job = std::make_shared<ClassifyJob>();
  const size_t labels = pipeline_.head_config().num_labels();
  const size_t top_k = size_t(integer_field(body, "top_k", 1, long(labels)).value_or(1));
  const bool truncate = bool_field(body, "truncate").value_or(false);
  // inputs: a text, a pair {"text", "text_pair"}, or an array of either
  const auto it = body.find("inputs");
  if (it == body.end() || it->is_null()) throw HttpError(400, "inputs: missing; send a string, an object {\"text\", \"text_pair\"} or an array of them");
  job->batched = it->is_array();
  const json items = job->batched ? *it : json::array({*it});
  if (items.empty()) throw HttpError(400, "inputs: an empty array; send at least one text");
  check_count(items.size(), "inputs");
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string field = field_at("inputs", i, job->batched);
    text::Encoding e;
    if (items[i].is_string()) {
      check_texts({items[i].get<std::string>()}, field, false);
      e = encode(items[i].get<std::string>(), field, truncate);
    } else if (items[i].is_object()) {
      refuse_unknown_fields(items[i], {"text", "text_pair"}, field + ".");
      const auto a = string_field(items[i], "text", field + "."), b = string_field(items[i], "text_pair", field + ".");
      if (!a) throw HttpError(400, fmt::format("{}.text: missing", field));
      check_texts({*a}, field + ".text", false);
      if (b) check_texts({*b}, field + ".text_pair", false);
      e = encode(*a, field, truncate, true, b ? &*b : nullptr);
    } else {
      throw HttpError(400, fmt::format("{}: expected a string or an object {{\"text\", \"text_pair\"}}, got {}", field, json_summary(items[i])));
    }
    job->tokens += e.size();
    job->inputs.push_back(sequence_of(e));
  }
  check_tokens(job->tokens);
  job->sequences = job->inputs.size();
  job->group = "/classify";
  job->run_batch = ClassifyJob::runner([this, labels](const std::vector<models::Sequence>& all) {
    return pipeline_.classify_encoded(all, labels);  // every label; each job keeps its top_k
  });
  job->write = [top_k](const ClassifyJob& j) {
    return json_text(one_or_array(j, [&](const std::vector<inference::LabelScore>& l) {
      return label_scores_json({l.begin(), l.begin() + long(std::min(top_k, l.size()))});
    }));
  };
  return job;
}

std::shared_ptr<ModelJob> Endpoints::ner(const json& body) const {
  refuse_unknown_fields(body, {"inputs"});
  using NerJob = BatchedJob<std::string, std::vector<inference::FoundEntity>>;
  auto job = std::make_shared<NerJob>();
  job->inputs = texts_field(body, "inputs", &job->batched);
  check_texts(job->inputs, "inputs", job->batched);
  for (size_t i = 0; i < job->inputs.size(); ++i)  // long texts run in windows: limited by the request's tokens
    job->tokens += count_tokens(job->inputs[i], field_at("inputs", i, job->batched)) + 2;
  check_tokens(job->tokens);
  job->sequences = job->inputs.size();
  job->group = "/ner";
  job->run_batch = NerJob::runner([this](const std::vector<std::string>& all) {
    return pipeline_.entities(all);
  });
  job->write = [](const NerJob& j) {
    return json_text(one_or_array(j, [](const std::vector<inference::FoundEntity>& entities) {
      json out = json::array();
      for (const auto& e : entities)
        out.push_back({{"entity_group", e.type}, {"score", e.score}, {"word", e.text}, {"start", e.start}, {"end", e.end}});
      return out;
    }));
  };
  return job;
}

std::shared_ptr<ModelJob> Endpoints::qa(const json& body) const {
  refuse_unknown_fields(body, {"question", "context", "max_answer_len", "handle_impossible_answer"});
  using QaJob = BatchedJob<text::SquadQuestion, text::SquadPrediction>;
  auto job = std::make_shared<QaJob>();
  text::SquadQuestion q;
  q.id = "0";
  const auto question = string_field(body, "question"), context = string_field(body, "context");
  if (!question) throw HttpError(400, "question: missing");
  if (!context) throw HttpError(400, "context: missing");
  check_texts({*question}, "question", false);
  check_texts({*context}, "context", false);
  q.question = *question;
  q.context = std::make_shared<const std::string>(*context);
  text::SquadDecodeOptions decode;
  decode.max_answer_length = size_t(integer_field(body, "max_answer_len", 1, 512).value_or(15));  // the pipeline's default
  decode.version_2 = bool_field(body, "handle_impossible_answer").value_or(false);
  // The windows as Pipeline::answer cuts them: min(384, positions) tokens, a third shared, the
  // question's first 64 tokens in each.
  const size_t question_tokens = count_tokens(*question, "question"), context_tokens = count_tokens(*context, "context");
  if (question_tokens == 0) throw HttpError(422, "question: no words");
  if (context_tokens == 0) throw HttpError(422, "context: no words");
  const size_t window = std::min<size_t>(384, pipeline_.max_tokens()), stride = window / 3;
  const size_t kept = std::min<size_t>(question_tokens, 64), spent = kept + pair_special_tokens_;
  if (spent + stride >= window)
    throw HttpError(422, fmt::format("question: {} tokens leave {} of the model's {}-token windows for the context, no more than "
                                     "the {} consecutive windows share; ask a shorter question", kept,
                                     window > spent ? window - spent : 0, window, stride));
  job->tokens = question_tokens + context_tokens + pair_special_tokens_;
  check_tokens(job->tokens);
  job->inputs.push_back(std::move(q));
  job->sequences = 1;
  job->group = fmt::format("/qa {} {}", decode.max_answer_length, decode.version_2);
  job->run_batch = QaJob::runner([this, decode](const std::vector<text::SquadQuestion>& all) {
    return pipeline_.answer(all, decode);
  });
  job->write = [](const QaJob& j) {
    const auto& p = j.outputs.front();
    return json_text({{"score", p.probability}, {"start", p.start}, {"end", p.end}, {"answer", p.text}});
  };
  return job;
}

std::shared_ptr<ModelJob> Endpoints::fill_mask(const json& body) const {
  refuse_unknown_fields(body, {"inputs", "top_k"});
  using FillJob = BatchedJob<std::string, std::vector<std::vector<inference::MaskFill>>>;
  auto job = std::make_shared<FillJob>();
  job->inputs = texts_field(body, "inputs", &job->batched);
  check_texts(job->inputs, "inputs", job->batched);
  const size_t top_k = size_t(integer_field(body, "top_k", 1, 100).value_or(5));
  const int32_t mask = pipeline_.tokenizer().mask_id();
  for (size_t i = 0; i < job->inputs.size(); ++i) {
    const std::string field = field_at("inputs", i, job->batched);
    const text::Encoding e = encode(job->inputs[i], field, false);
    if (std::find(e.ids.begin(), e.ids.end(), mask) == e.ids.end())
      throw HttpError(422, fmt::format("{}: the text has no {}", field, pipeline_.tokenizer().special_tokens().mask));
    job->tokens += e.size();
  }
  check_tokens(job->tokens);
  job->sequences = job->inputs.size();
  job->group = fmt::format("/fill-mask {}", top_k);  // each candidate is decoded: only the top_k asked for
  job->run_batch = FillJob::runner([this, top_k](const std::vector<std::string>& all) { return pipeline_.fill_mask(all, top_k); });
  job->write = [](const FillJob& j) {
    return json_text(one_or_array(j, [](const std::vector<std::vector<inference::MaskFill>>& masks) {
      json per_mask = json::array();
      for (const auto& candidates : masks) {
        json c = json::array();
        for (size_t k = 0; k < candidates.size(); ++k)
          c.push_back({{"score", candidates[k].score}, {"token", candidates[k].id}, {"token_str", candidates[k].token},
                       {"sequence", candidates[k].sequence}});
        per_mask.push_back(c);
      }
      return per_mask.size() == 1 ? per_mask.front() : per_mask;  // one mask: its candidates, as transformers answers
    }));
  };
  return job;
}

std::shared_ptr<ModelJob> Endpoints::tokenize(const json& body) const {
  refuse_unknown_fields(body, {"inputs", "add_special_tokens"});
  struct TokenizeJob : ModelJob {
    json tokens;
    std::string answer() const override { return json_text(tokens); }
  };
  auto job = std::make_shared<TokenizeJob>();  // no group: answered without the model
  bool batched = false;
  const auto texts = texts_field(body, "inputs", &batched);
  check_texts(texts, "inputs", batched);
  const bool special = bool_field(body, "add_special_tokens").value_or(true);
  job->tokens = json::array();
  size_t counted = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    text::EncodeOptions eo;
    eo.add_special_tokens = special;
    text::Encoding e;
    try {
      e = pipeline_.tokenizer().encode(texts[i], eo);
    } catch (const std::exception& ex) {
      throw HttpError(400, fmt::format("{}: {}", field_at("inputs", i, batched), ex.what()));
    }
    json tokens = json::array();
    for (size_t t = 0; t < e.size(); ++t)
      tokens.push_back({{"id", e.ids[t]}, {"text", pipeline_.tokenizer().id_to_token(e.ids[t])},
                        {"special", !e.special_tokens_mask.empty() && e.special_tokens_mask[t] != 0},
                        {"start", e.offsets.empty() ? 0 : e.offsets[t].first}, {"stop", e.offsets.empty() ? 0 : e.offsets[t].second}});
    job->tokens.push_back(tokens);
    counted += e.size();
    check_tokens(counted);  // bounds the answer's size too
  }
  return job;
}

}  // namespace xg::serve
