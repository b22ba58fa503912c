#pragma once
// The everyday jobs in one call each, as transformers' pipeline() and AutoModel: a checkpoint of
// any family opened with its tokenizer, then strings in and labels, entities, answers, filled
// masks or vectors out. Tokenizing, batching, padding, truncation to the model's positions,
// no-gradient eval mode and the matmul precision are inside.
//
//   auto p = xg::inference::Pipeline::load("runs/sentiment/best");
//   for (const auto& [label, score] : p.classify("a warm, funny film"))
//     fmt::print("{} {:.3f}\n", label, score);
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/precision.hpp"
#include "inference/ner_tagging.hpp"
#include "models/core/checkpoint.hpp"
#include "models/core/head_config.hpp"
#include "models/core/sentence_embedding.hpp"
#include "nn/packed_weights.hpp"
#include "text/squad_data.hpp"
#include "text/squad_predictions.hpp"
#include "text/tokenizer.hpp"

namespace xg::inference {

struct PipelineOptions {
  // A vocab.txt, vocab.json (merges.txt beside it), SentencePiece .model or tokenizer directory
  // to use instead of the checkpoint's own tokenizer files.
  std::string tokenizer;
  bool cased = false;  // with a vocab.txt `tokenizer`: keep case and accents
  // BF16: the linear layers' GEMMs on bf16 operands; INT8: on int8 weights (per output channel) and
  // activations quantized per row at run time (autograd/precision.hpp)
  MatmulPrecision precision = MatmulPrecision::FP32;
  size_t batch = 32;       // sequences per forward pass
  size_t max_length = 0;   // tokens per sequence, special ones included; 0 (or more): what the positions hold
  bool verify_checksums = true;  // a checkpoint listing its files' CRC32C (checksums.json) is checked
};

// A label and its probability (softmax over the labels; each label's sigmoid for a multi-label
// classifier), or a regression's value under the one label.
struct LabelScore {
  std::string label;
  double score = 0;
};

// One candidate for a mask: the token, its probability and the text with it in place.
struct MaskFill {
  int32_t id = 0;
  size_t position = 0;  // the mask's token index in the encoded text
  std::string token, sequence;
  double score = 0;
};

class Pipeline {
 public:
  // The checkpoint in `dir` (config.json, model.safetensors or pytorch_model.bin, its tokenizer
  // files; a run's output directory stands for its best model or newest checkpoint, said in
  // notes()), in eval mode, its linear weights packed once for serving. Throws naming the directory
  // and the file when something is missing or does not match (a tokenizer larger than the
  // model's vocabulary, a padding id other than the config's where positions follow padding).
  static Pipeline load(const std::string& dir, const PipelineOptions& options = {});
  // A loaded model and tokenizer, checked as load checks them; `name` names them in errors.
  Pipeline(models::LoadedModel loaded, std::unique_ptr<text::Tokenizer> tokenizer, const PipelineOptions& options,
           const std::string& name);

  models::PretrainedModel& model() const { return *loaded_.model; }
  const text::Tokenizer& tokenizer() const { return *tokenizer_; }
  // What the loader said (head weights initialised or dropped, older names read).
  const std::vector<std::string>& notes() const { return loaded_.notes; }
  // Tokens one sequence may hold (special ones included): the positions, less those RoBERTa's
  // skip, capped by PipelineOptions::max_length.
  size_t max_tokens() const { return max_tokens_; }
  // Sequences (or windows) per forward pass from now on (PipelineOptions::batch).
  void set_batch(size_t batch);

  // A *ForSequenceClassification's labels for each text (or text pair), the top_k most likely
  // first. Throws when the model is not a sequence classifier.
  std::vector<LabelScore> classify(const std::string& text, size_t top_k = 1) const;
  std::vector<std::vector<LabelScore>> classify(const std::vector<std::string>& texts, size_t top_k = 1) const;
  std::vector<std::vector<LabelScore>> classify_pairs(const std::vector<std::pair<std::string, std::string>>& pairs,
                                                      size_t top_k = 1) const;

  // A *ForTokenClassification's entities in raw text, with code-point spans (as Python indexes
  // the string) and scores; texts longer than the positions run in overlapping windows.
  std::vector<FoundEntity> entities(const std::string& text) const;
  // Windows of `align` (max_len capped at max_tokens()); `where(i)` names text i in errors
  // (default "text i+1").
  std::vector<std::vector<FoundEntity>> entities(const std::vector<std::string>& texts, text::WordAlignOptions align = {},
                                                 const std::function<std::string(size_t)>& where = {}) const;

  // A *ForQuestionAnswering's answer: a span of the context (code points), its score and
  // probability; with options.version_2 the answer may be "" (no answer in the context).
  text::SquadPrediction answer(const std::string& question, const std::string& context,
                               const text::SquadDecodeOptions& options = {}) const;
  // Many questions, each window `features` long (max_len 0: min(384, max_tokens())).
  std::vector<text::SquadPrediction> answer(const std::vector<text::SquadQuestion>& questions,
                                            const text::SquadDecodeOptions& options = {},
                                            text::SquadFeatureOptions features = {0, 0, 64}) const;

  // For each mask token in the text (in order), its top_k candidates. Needs a language-model
  // head (*ForMaskedLM, *ForPreTraining); throws when the text has no mask token.
  std::vector<std::vector<MaskFill>> fill_mask(const std::string& text, size_t top_k = 5) const;
  // Many texts in one forward pass each batch; `where(i)` names text i in errors (default "text i+1").
  std::vector<std::vector<std::vector<MaskFill>>> fill_mask(const std::vector<std::string>& texts, size_t top_k = 5,
                                                            const std::function<std::string(size_t)>& where = {}) const;

  // One vector per text from the last hidden layer: the first token's or the mean over tokens,
  // optionally of unit length (all-MiniLM-L6-v2's sentence embeddings: Mean, normalize).
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts, models::Pooling pooling = models::Pooling::Cls,
                                        bool normalize = false, const std::function<std::string(size_t)>& where = {}) const;

  // embed() after tokenizing: one vector per encoded input.
  std::vector<std::vector<float>> embed_encoded(const std::vector<models::Sequence>& inputs, models::Pooling pooling,
                                                bool normalize) const;

  // The classifier's head config (labels, problem type) of a sequence or token classifier.
  models::HeadConfig head_config() const;
  // The sequence classifier's logits for encoded inputs, a row of num_labels per input, turned
  // into labels: what classify() does after tokenizing.
  std::vector<std::vector<LabelScore>> classify_encoded(const std::vector<models::Sequence>& inputs, size_t top_k) const;

 private:
  // Throws unless the model's architecture ends in `suffix`, naming `what` it must be.
  void require_head(const std::string& suffix, const std::string& what) const;

  models::LoadedModel loaded_;
  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::unique_ptr<nn::InferenceWeights> packed_weights_;
  PipelineOptions options_;
  std::string name_;
  size_t max_tokens_ = 0;
};

}  // namespace xg::inference
