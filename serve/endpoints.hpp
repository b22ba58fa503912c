#pragma once
// The server's model endpoints as functions of a JSON request, apart from HTTP: each reads and
// checks its request on the connection's thread (types, limits, tokenizing) into a job, which the
// batcher runs with other jobs of its group, and then writes the job's answer. Field names follow
// text-embeddings-inference (/embed, /tokenize, "inputs", "normalize", "truncate") and
// transformers' pipelines (labels and scores, entity_group, answer/start/end, token_str).
// serve/openapi.json documents every request and answer.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inference/pipeline.hpp"
#include "models/core/sentence_embedding.hpp"
#include "serve/batcher.hpp"

namespace xg::serve {

// The model endpoints (POST), in the order /info lists them; a model has those its head allows.
inline const std::vector<std::string> kModelEndpoints{"/embed", "/classify", "/ner", "/qa", "/fill-mask", "/tokenize"};

struct RequestLimits {
  size_t max_inputs = 32;           // texts in one request (more: 413)
  size_t max_text_bytes = 100000;   // bytes of one text (more: 413)
  // Tokens of one request, all its texts (more: 413): bounds the memory a request can take, and
  // /ner's and /qa's long texts, which run in windows, with it.
  size_t max_request_tokens = 16384;
};

// A job that can write its answer, as JSON text, once run (or at once, when it needs no model: no group).
struct ModelJob : Job {
  virtual std::string answer() const = 0;
};

class Endpoints {
 public:
  // `model_dir` is read for a sentence-transformers pooling config (1_Pooling/config.json), the
  // default of /embed's "pooling". The pipeline is used by the batcher's worker only (each
  // batch is one forward pass: its batch size is set here, unbounded); the tokenizer from any thread.
  Endpoints(inference::Pipeline& pipeline, const RequestLimits& limits, const std::string& model_dir);

  // The POST endpoints this model has ("/embed", "/classify", ...), in the order /info lists them.
  const std::vector<std::string>& available() const { return available_; }
  // Throws HttpError 404 unless the model has POST `path`.
  void require_available(const std::string& path) const;
  // The request `body` of POST `path` as a job; throws HttpError (400, 404, 413, 422) naming the
  // field when it cannot be run.
  std::shared_ptr<ModelJob> prepare(const std::string& path, const nlohmann::json& body) const;
  // GET /info's document (precision as given to the server).
  nlohmann::json info(const std::string& model_name, const std::string& precision, size_t max_batch_tokens) const;

  // The head the model has: "sequence-classification", "token-classification",
  // "question-answering", "masked-lm", "pre-training", "multiple-choice" or "none".
  const std::string& head() const { return head_; }
  models::Pooling default_pooling() const { return default_pooling_; }

 private:
  std::shared_ptr<ModelJob> embed(const nlohmann::json& body) const;
  std::shared_ptr<ModelJob> classify(const nlohmann::json& body) const;
  std::shared_ptr<ModelJob> ner(const nlohmann::json& body) const;
  std::shared_ptr<ModelJob> qa(const nlohmann::json& body) const;
  std::shared_ptr<ModelJob> fill_mask(const nlohmann::json& body) const;
  std::shared_ptr<ModelJob> tokenize(const nlohmann::json& body) const;
  // `texts` within the limits, named as `field`[i].
  void check_texts(const std::vector<std::string>& texts, const std::string& field, bool batched) const;
  // `count` texts within max_inputs.
  void check_count(size_t count, const std::string& field) const;
  // A request's tokens within max_request_tokens.
  void check_tokens(size_t tokens) const;
  // A text's tokens without special ones or truncation (what windows will cover), checked as encode() checks.
  size_t count_tokens(const std::string& text, const std::string& field) const;
  // A text's encoding (with `text_pair` after it, when given), or HttpError 400 (invalid UTF-8) or
  // 422 (more tokens than the model takes, unless `truncate`) naming `field`.
  text::Encoding encode(const std::string& text, const std::string& field, bool truncate, bool special_tokens = true,
                        const std::string* text_pair = nullptr) const;

  inference::Pipeline& pipeline_;
  RequestLimits limits_;
  models::Pooling default_pooling_ = models::Pooling::Cls;
  std::string head_;                     // what head() says, found once
  std::vector<std::string> available_;   // what available() says
  size_t pair_special_tokens_ = 3;  // [CLS] A [SEP] B [SEP]: what a QA window spends on them
};

}  // namespace xg::serve
