#pragma once
// Pre-training for every family through one seam. A model that can be pre-trained implements
// PretrainingHeads: the masked-language-model head at the masked positions only (as the original
// BERT: the vocabulary projection is the largest matmul, and most of its rows would be thrown
// away), plus the family's sentence-level task if it has one: BERT's next-sentence prediction,
// ALBERT's sentence-order prediction; RoBERTa has none.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "models/core/model_inputs.hpp"
#include "nn/transformer.hpp"

namespace xg::models {

// What a pre-training step needs besides the inputs: int64 tensors, as the model's inputs.
struct PretrainingTargets {
  Tensor masked_positions;  // (M): flat indices b*T + t of the predicted tokens
  Tensor masked_labels;     // (M): their original ids
  Tensor sentence_labels;   // (B): NSP (1 = B is random) or SOP (1 = A and B swapped); ignored by MLM only
  // What a model draws at random for the batch (ELECTRA's generator samples) comes from these: the
  // run's seed (and epoch) and each sequence's place in the run's stream of sequences, the first
  // of this batch's at first_sequence. The draws for a sequence are then the same however the
  // stream is cut into batches, ranks and accumulation steps (but for a batch that runs past the
  // end of an epoch, whose sequences keep counting in the epoch it started in), and on resume.
  uint64_t sample_seed = 0, first_sequence = 0;
};
// Targets from the data pipeline's plain vectors.
PretrainingTargets make_pretraining_targets(const std::vector<int64_t>& masked_positions,
                                            const std::vector<int64_t>& masked_labels,
                                            const std::vector<int64_t>& sentence_labels);

struct PretrainingOutput {
  Tensor loss;             // scalar: mlm_loss (+ sentence_loss, or + 50 x replaced_loss for ELECTRA)
  Tensor mlm_loss;         // scalar: mean over the masked tokens
  Tensor sentence_loss;    // scalar; undefined without a sentence task
  Tensor mlm_logits;       // (M, V): only where predictions are made
  Tensor sentence_logits;  // (B, 2); undefined without a sentence task
  size_t mlm_correct = 0, sentence_correct = 0;
  // Replaced-token detection (ELECTRA), undefined or zero otherwise: the discriminator's binary
  // cross-entropy, mean over the real tokens, and what it got right there.
  Tensor replaced_loss;
  size_t tokens = 0, tokens_correct = 0;
  size_t replaced = 0, predicted_replaced = 0, replaced_found = 0;  // actual, predicted, both
};

// The sentence-level task of a pre-training model: what PretrainingTargets::sentence_labels mean.
enum class SentenceTask { None, NextSentence, SentenceOrder };
// "none", "nsp", "sop"
std::string sentence_task_name(SentenceTask t);

class PretrainingHeads {
 public:
  virtual ~PretrainingHeads() = default;
  virtual SentenceTask sentence_task() const = 0;
  // Whether the loss is replaced-token detection (ELECTRA: PretrainingOutput's replaced_* are set)
  // rather than the MLM loss alone.
  virtual bool detects_replaced_tokens() const { return false; }
  // Throws, saying what is missing, when the model cannot pre-train as it is (an ELECTRA
  // discriminator without its generator): a run asks before it reads any data.
  virtual void check_can_pretrain() const {}
  // Losses, logits and correct counts of one batch (the graph recorded when gradients are on).
  virtual PretrainingOutput forward_pretraining(const ModelInputs& in, const PretrainingTargets& targets) = 0;
  // Gradient checkpointing of the encoder's layers; throws for a model whose encoder cannot.
  virtual void set_checkpoint_activations(bool on) = 0;
};

// Throws naming `who` and the field for targets that do not fit the batch: dtypes, counts,
// positions outside the batch's tokens; sentence labels only when `sentence_task` needs them.
void check_pretraining_targets(const ModelInputs& in, const PretrainingTargets& t, SentenceTask sentence_task,
                               const std::string& who);

// The encoder rows a pre-training step reads: each sequence's first position (the pooler's, for
// the sentence task) then its masked positions, padded with the first position to the longest.
// The encoder computes its last layer there only (nn::Encoder::forward_rows). `masked` maps
// t.masked_positions to rows of that (B, rows.per_sequence, H) output.
struct PretrainingRows {
  nn::OutputRows rows;
  std::vector<int64_t> masked;
};
PretrainingRows pretraining_rows(const ModelInputs& in, const PretrainingTargets& t);

// The MLM part every family shares: the rows of `hidden` (B, T', H) at `rows` (flat indices
// b * T' + t, PretrainingRows::masked) go through `head` as one (1, M, H) sequence; sets
// out.mlm_logits, mlm_loss, mlm_correct and loss.
void masked_lm_loss(const Tensor& hidden, const std::vector<int64_t>& rows, const PretrainingTargets& t,
                    const std::function<Tensor(const Tensor&)>& head, PretrainingOutput& out);
// Adds the sentence task's logits (B, 2): sets sentence_logits, sentence_loss, sentence_correct,
// and loss = mlm_loss + sentence_loss.
void add_sentence_loss(const Tensor& logits, const PretrainingTargets& t, PretrainingOutput& out);

// How many rows of `logits` (N, C) have their arg-max at `labels` (N, int64).
size_t count_correct(const Tensor& logits, const Tensor& labels);

}  // namespace xg::models
