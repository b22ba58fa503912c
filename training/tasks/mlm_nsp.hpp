#pragma once
// BERT pre-training as a Task: masked-language-model + next-sentence losses on BertForPreTraining,
// from raw text (instances made on the fly, dynamic masking) or static shards. The last 2% of
// documents (or the last shard records) are held out for evaluation: MLM accuracy, NSP accuracy,
// perplexity.
#include <memory>
#include <string>

#include "models/bert_config.hpp"
#include "training/task.hpp"
#include "training/trainer.hpp"
#include "util/options.hpp"

namespace xg::training {

struct MlmNspOptions {
  std::string corpus = "data/pretrain_corpus_small.txt";  // text (BERT format) or a directory of shards
  std::string vocab = "data/bert-base-uncased-vocab.txt";
  size_t train_vocab = 0;  // > 0: train a WordPiece vocabulary of this size from the corpus instead
  bool cased = false;
  std::string model = "tiny";  // preset name or a config.json path
  size_t seq_len = 128;
  size_t max_predictions = 20;
  float masked_lm_prob = 0.15f;
  bool whole_word_mask = false;
  size_t eval_instances = 256;  // held out for evaluation
  bool checkpoint_activations = false;  // recompute each encoder layer in the backward pass

  static const OptionTable<MlmNspOptions>& table();
};

// The config of a fresh model: a preset name or a config.json path, sized for the vocabulary and
// sequence length.
models::BertConfig bert_config_for(const std::string& model, size_t vocab_size, size_t seq_len);

// Builds the task: on resume (ctx.checkpoint) the model and vocabulary come from the checkpoint.
std::unique_ptr<Task> make_mlm_nsp_task(const MlmNspOptions& options, const TaskContext& ctx);

// Pre-trains per `trainer` and `task` (restored from the checkpoint on --resume).
RunResult run_pretraining(TrainerOptions trainer, MlmNspOptions task);

}  // namespace xg::training
