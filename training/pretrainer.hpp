#pragma once
// BERT pre-training (MLM + NSP) from raw text or static shards: the engine of
// examples/bert_pretrain. Checkpoints are Hugging Face directories plus the training state
// (optimizer moments, schedule step, RNG state, data position), so a run stopped at step k and
// resumed trains on exactly as an uninterrupted one would.
#include <cstdint>
#include <string>

namespace xg::training {

struct PretrainOptions {
  // data and vocabulary
  std::string corpus = "data/pretrain_corpus_small.txt";  // text (BERT format) or a directory of shards
  std::string vocab = "data/bert-base-uncased-vocab.txt";  // or a Hugging Face tokenizer directory
  size_t train_vocab = 0;  // > 0: train a WordPiece vocabulary of this size from the corpus instead
  bool cased = false;
  size_t max_predictions = 20;
  float masked_lm_prob = 0.15f;
  bool whole_word_mask = false;
  size_t eval_instances = 256;  // held out for evaluation
  // model and optimisation
  std::string model = "tiny";  // preset name or a config.json path
  size_t seq_len = 128;
  size_t batch = 16;
  size_t grad_accum = 1;
  float lr = 1e-3f;
  int64_t warmup = -1;  // steps; -1: 10% of the run
  int64_t steps = 800;  // optimizer steps in the whole run
  size_t epochs = 0;    // > 0: derive steps from passes over the training data
  std::string schedule = "linear";
  std::string optimizer = "adamw";
  float weight_decay = 0.01f;
  float clip = 1.0f;  // global gradient norm; 0 disables
  uint64_t seed = 42;
  // run control
  std::string out = "runs/bert_pretrain";
  std::string resume;       // checkpoint directory, or an --out directory (latest checkpoint)
  int64_t eval_every = 200;
  int64_t save_every = 200;
  int64_t stop_at = -1;     // stop (saving a checkpoint) after this step, as an interruption would
  size_t keep_checkpoints = 2;
  int64_t log_every = 10;   // plain log lines when not on a terminal
  int threads = 0;          // 0: XGRAD_NUM_THREADS or all cores
  bool quiet = false;
};

// Trains per `opt`; returns the step reached. SIGINT (Ctrl-C) saves a checkpoint and stops.
int64_t run_pretraining(const PretrainOptions& opt);

struct BenchmarkResult {
  double tokens_per_s;
  double seconds_per_step;
  double peak_rss_mb;
  size_t parameters;
};
// Times full training steps (forward, backward, AdamW; MLM at 15% of positions + NSP) on random
// token ids; opt.steps timed steps after two warm-up steps.
BenchmarkResult run_benchmark(const PretrainOptions& opt);

// Peak resident memory of this process so far (VmHWM), in MB.
double peak_rss_mb();

}  // namespace xg::training
