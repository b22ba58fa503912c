#pragma once
// What `bert_infer bench` times: the bare encoder's forward pass with no tape (eval mode,
// gradients off) on random ids or real sentences; and the record every benchmark reports.
#include <cstddef>
#include <cstdint>
#include <string>

#include "autograd/precision.hpp"

namespace xg::inference {

// What a benchmark measured (inference here, training steps in training/benchmark.hpp).
struct BenchmarkResult {
  double tokens_per_s;
  double seconds_per_step;
  double peak_rss_mb;
  size_t parameters;
  // Inference at bf16 only: |last_hidden_state(bf16) - last_hidden_state(fp32)| over the first
  // batch, max and mean; negative when not measured.
  double max_abs_diff = -1, mean_abs_diff = -1;
  // Inference: the tokens of one pass, real and with padding; whether the fused path ran.
  size_t real_tokens = 0, padded_tokens = 0;
  bool fused = false;
  std::string optimizer = {};  // training: the optimizer stepped ("adamw", "lamb")
};

// `steps` timed passes after two warm-up ones.
struct InferenceBenchmarkOptions {
  std::string model = "base";  // a [family-]size preset (random weights) or a checkpoint directory (its encoder)
  size_t batch = 8, seq_len = 128, steps = 20;
  int threads = 0;
  uint64_t seed = 42;
  // Of the timed passes; at BF16 the first batch also runs at FP32 for the differences.
  MatmulPrecision precision = MatmulPrecision::FP32;
  // Empty: four batches of batch x seq_len random ids, every position a real token. Else real
  // text: the first `batch` non-empty lines of this file, tokenized by `vocab` (a --vocab path;
  // empty: the checkpoint directory's tokenizer), cut to seq_len tokens and padded to the longest,
  // as a user batches sentences.
  std::string sentences, vocab;
  // Time the output at each sequence's first token only, as a sentence classifier reads it: the
  // last layer runs there alone (see nn::Encoder::forward_rows), every row with
  // XGRAD_SPARSE_LAST_LAYER=0.
  bool first_token = false;
};

// Tokens/s counts the real (unpadded) tokens of a pass.
BenchmarkResult run_inference_benchmark(const InferenceBenchmarkOptions& opt);

// Peak resident memory of this process so far (VmHWM), in MB.
double peak_rss_mb();

}  // namespace xg::inference
