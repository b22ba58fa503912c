// Pre-trains BERT (MLM + NSP) from raw text or shards. With no flags: a small model on the
// bundled corpus for a few minutes. See --help.
#include <fmt/format.h>

#include <string>

#include "training/pretrainer.hpp"
#include "util/flags.hpp"

using xg::training::PretrainOptions;

namespace {

void register_flags(xg::Flags& f, PretrainOptions& o, bool& benchmark) {
  f.value("--corpus", o.corpus, "text in the BERT format (a sentence per line, blank line between documents) or a directory of create_pretraining_data shards");
  f.value("--vocab", o.vocab, "WordPiece vocab.txt, or a tokenizer directory (tokenizer_config.json decides casing)");
  f.value("--train-vocab", o.train_vocab, "train a WordPiece vocabulary of SIZE tokens from the corpus instead of --vocab (0: no)");
  f.toggle("--cased", o.cased, "keep case and accents (default: uncased)");
  f.value("--model", o.model, "preset (tiny, mini, small, medium, base, large) or a config.json");
  f.value("--seq-len", o.seq_len, "tokens per sequence");
  f.value("--batch", o.batch, "sequences per micro-batch");
  f.value("--grad-accum", o.grad_accum, "micro-batches per optimizer step");
  f.value("--lr", o.lr, "peak learning rate");
  f.value("--warmup", o.warmup, "warm-up steps (-1: 10% of --steps)");
  f.value("--steps", o.steps, "optimizer steps of the whole run");
  f.value("--epochs", o.epochs, "passes over the training data, setting --steps (0: use --steps)");
  f.value("--schedule", o.schedule, "after warm-up: linear, cosine, polynomial, inverse_sqrt or constant");
  f.value("--optimizer", o.optimizer, "adamw or lamb");
  f.value("--weight-decay", o.weight_decay, "decoupled weight decay, not on biases and LayerNorm");
  f.value("--clip", o.clip, "global gradient-norm clip, 0 to disable");
  f.value("--masked-lm-prob", o.masked_lm_prob, "fraction of tokens masked");
  f.value("--max-predictions", o.max_predictions, "masked tokens per sequence at most");
  f.toggle("--whole-word-mask", o.whole_word_mask, "mask all pieces of a word together");
  f.value("--seed", o.seed, "seed for weights, data order, masks and dropout");
  f.value("--out", o.out, "output directory: checkpoint-NNNNNN/ (Hugging Face format + training state), metrics.jsonl");
  f.value("--resume", o.resume, "checkpoint directory (or an --out directory: its newest checkpoint) to continue from", false);
  f.value("--eval-every", o.eval_every, "evaluate on the held-out slice every N steps, 0 never");
  f.value("--eval-instances", o.eval_instances, "held-out instances");
  f.value("--save-every", o.save_every, "checkpoint every N steps, 0 only at the end");
  f.value("--keep", o.keep_checkpoints, "checkpoints kept");
  f.value("--stop-at", o.stop_at, "stop after step N with a checkpoint, as an interruption would (-1: no)");
  f.value("--log-every", o.log_every, "plain log line every N steps when not on a terminal");
  f.value("--threads", o.threads, "threads (0: XGRAD_NUM_THREADS or all cores)");
  f.toggle("--benchmark", benchmark, "time training steps on random token ids (honours --model --batch --seq-len --steps --threads); last line 'tokens/s: X'");
}

}  // namespace

int main(int argc, char** argv) {
  PretrainOptions opt;
  bool benchmark = false;
  xg::Flags flags("bert_pretrain", "Pre-trains BERT with masked-language-model and next-sentence losses.\n"
                                   "Ctrl-C saves a checkpoint and stops; --resume continues exactly where it stopped.");
  register_flags(flags, opt, benchmark);
  if (auto code = flags.parse_or_exit(argc, argv)) return *code;
  try {
    if (benchmark) {
      if (opt.steps == PretrainOptions{}.steps) opt.steps = 10;
      fmt::print("benchmark: model {}, batch {} x {} tokens, {} timed steps (AdamW, MLM at 15% of positions + NSP)\n",
                 opt.model, opt.batch, opt.seq_len, opt.steps);
      const auto r = xg::training::run_benchmark(opt);
      fmt::print("parameters: {:.1f}M\nseconds/step: {:.3f}\npeak memory MB: {:.0f}\ntokens/s: {:.1f}\n",
                 double(r.parameters) / 1e6, r.seconds_per_step, r.peak_rss_mb, r.tokens_per_s);
      return 0;
    }
    xg::training::run_pretraining(opt);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bert_pretrain: {}\n", e.what());
    return 1;
  }
  return 0;
}
