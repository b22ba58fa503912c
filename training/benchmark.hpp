#pragma once
// The speed yardsticks of bert_pretrain --benchmark and bert_finetune --benchmark: full training
// steps on random ids.
#include <cstddef>
#include <string>

#include "inference/benchmark.hpp"
#include "training/tasks/pretraining.hpp"
#include "training/trainer.hpp"

namespace xg::training {

using inference::BenchmarkResult;

// Times full training steps (forward, backward, the optimizer's step; MLM at 15% of positions,
// plus the sentence task of --pairing's head model) on random token ids of the preset's
// vocabulary: trainer.steps timed steps after two warm-up steps, with trainer.batch, task.seq_len,
// task.model, task.pairing, trainer.threads, trainer.optimizer (auto: the family's recipe, LAMB for
// ALBERT), trainer.lr, trainer.weight_decay, trainer.seed and trainer.precision.
BenchmarkResult run_benchmark(const TrainerOptions& trainer, const PretrainOptions& task);

// Times fine-tuning steps of sentence classification (the family's *ForSequenceClassification:
// forward, cross-entropy over num_labels, backward, AdamW) on random token ids of the preset's
// vocabulary, every position a real token: trainer.steps timed steps after two warm-up steps, with
// trainer.batch, seq_len, `model` (a [family-]size preset), trainer.threads, trainer.lr,
// trainer.weight_decay, trainer.seed and trainer.precision.
BenchmarkResult run_finetune_benchmark(const TrainerOptions& trainer, const std::string& model, size_t seq_len,
                                       size_t num_labels = 2);

}  // namespace xg::training
