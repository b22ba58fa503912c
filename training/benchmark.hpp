#pragma once
// The speed yardsticks of bert_pretrain --benchmark and bert_finetune --benchmark: full training
// steps on random ids.
#include <cstddef>

#include "autograd/precision.hpp"
#include "training/tasks/pretraining.hpp"
#include "training/trainer.hpp"

namespace xg::training {

struct BenchmarkResult {
  double tokens_per_s;
  double seconds_per_step;
  double peak_rss_mb;
  size_t parameters;
  // Inference at bf16 only: |last_hidden_state(bf16) - last_hidden_state(fp32)| over the first
  // batch, max and mean; negative when not measured.
  double max_abs_diff = -1, mean_abs_diff = -1;
};
// Times full training steps (forward, backward, AdamW; MLM at 15% of positions, plus the
// sentence task of --pairing's head model) on random token ids of the preset's vocabulary:
// trainer.steps timed steps after two warm-up steps, with trainer.batch, task.seq_len, task.model,
// task.pairing, trainer.threads, trainer.lr, trainer.weight_decay, trainer.seed and trainer.precision.
BenchmarkResult run_benchmark(const TrainerOptions& trainer, const PretrainOptions& task);

// Times fine-tuning steps of sentence classification (the family's *ForSequenceClassification:
// forward, cross-entropy over num_labels, backward, AdamW) on random token ids of the preset's
// vocabulary, every position a real token: trainer.steps timed steps after two warm-up steps, with
// trainer.batch, seq_len, `model` (a [family-]size preset), trainer.threads, trainer.lr,
// trainer.weight_decay, trainer.seed and trainer.precision.
BenchmarkResult run_finetune_benchmark(const TrainerOptions& trainer, const std::string& model, size_t seq_len,
                                       size_t num_labels = 2);

// Times the bare encoder's forward pass with no tape (eval mode, gradients off): `steps` timed
// passes after two warm-up ones, over four batches of `batch` x `seq_len` random ids, every position
// a real token. `model` is a [family-]size preset (random weights) or a checkpoint directory (its
// encoder, as loaded). Tokens/s counts batch x seq_len per pass. `precision` is the matmul
// precision of the timed passes; at BF16 the first batch also runs at FP32 for the differences.
BenchmarkResult run_inference_benchmark(const std::string& model, size_t batch, size_t seq_len, size_t steps,
                                        int threads, uint64_t seed,
                                        MatmulPrecision precision = MatmulPrecision::FP32);

// Peak resident memory of this process so far (VmHWM), in MB.
double peak_rss_mb();

}  // namespace xg::training
