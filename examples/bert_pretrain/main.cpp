// Pre-trains BERT (MLM + NSP) from raw text or shards. With no flags: a small model on the
// bundled corpus for a few minutes. See --help.
#include <fmt/format.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <string>

#include "training/pretrainer.hpp"

using xg::training::PretrainOptions;

namespace {

struct Flag {
  std::string help;
  std::function<void(const std::string&)> set;  // null for switches
  std::function<void()> on;
};

std::map<std::string, Flag> flags(PretrainOptions& o, bool& benchmark) {
  const PretrainOptions d;
  auto num = [](auto& field) {
    return [&field](const std::string& v) {
      using T = std::decay_t<decltype(field)>;
      size_t used = 0;
      if constexpr (std::is_same_v<T, float>) field = std::stof(v, &used);
      else if constexpr (std::is_same_v<T, int>) field = std::stoi(v, &used);
      else if constexpr (std::is_signed_v<T>) field = T(std::stoll(v, &used));
      else {
        if (!v.empty() && v[0] == '-') throw std::invalid_argument("negative");
        field = T(std::stoull(v, &used));
      }
      if (used != v.size()) throw std::invalid_argument("trailing characters");
    };
  };
  auto str = [](std::string& field) { return [&field](const std::string& v) { field = v; }; };
  return {
      {"--corpus", {fmt::format("text in the BERT format (a sentence per line, blank line between documents) or a directory of create_pretraining_data shards ({})", d.corpus), str(o.corpus), {}}},
      {"--vocab", {fmt::format("WordPiece vocab.txt ({})", d.vocab), str(o.vocab), {}}},
      {"--train-vocab", {"train a WordPiece vocabulary of SIZE tokens from the corpus instead of --vocab", num(o.train_vocab), {}}},
      {"--cased", {"keep case and accents (default: uncased)", {}, [&] { o.cased = true; }}},
      {"--model", {fmt::format("preset (tiny, mini, small, medium, base, large) or a config.json ({})", d.model), str(o.model), {}}},
      {"--seq-len", {fmt::format("tokens per sequence ({})", d.seq_len), num(o.seq_len), {}}},
      {"--batch", {fmt::format("sequences per micro-batch ({})", d.batch), num(o.batch), {}}},
      {"--grad-accum", {fmt::format("micro-batches per optimizer step ({})", d.grad_accum), num(o.grad_accum), {}}},
      {"--lr", {fmt::format("peak learning rate ({})", d.lr), num(o.lr), {}}},
      {"--warmup", {"warm-up steps (default: 10% of --steps)", num(o.warmup), {}}},
      {"--steps", {fmt::format("optimizer steps of the whole run ({})", d.steps), num(o.steps), {}}},
      {"--epochs", {"passes over the training data (sets --steps)", num(o.epochs), {}}},
      {"--schedule", {fmt::format("linear, cosine, polynomial, inverse_sqrt or constant, after warm-up ({})", d.schedule), str(o.schedule), {}}},
      {"--optimizer", {fmt::format("adamw or lamb ({})", d.optimizer), str(o.optimizer), {}}},
      {"--weight-decay", {fmt::format("decoupled weight decay, not on biases and LayerNorm ({})", d.weight_decay), num(o.weight_decay), {}}},
      {"--clip", {fmt::format("global gradient-norm clip, 0 to disable ({})", d.clip), num(o.clip), {}}},
      {"--masked-lm-prob", {fmt::format("fraction of tokens masked ({})", d.masked_lm_prob), num(o.masked_lm_prob), {}}},
      {"--max-predictions", {fmt::format("masked tokens per sequence at most ({})", d.max_predictions), num(o.max_predictions), {}}},
      {"--whole-word-mask", {"mask all pieces of a word together", {}, [&] { o.whole_word_mask = true; }}},
      {"--seed", {fmt::format("seed for weights, data order, masks and dropout ({})", d.seed), num(o.seed), {}}},
      {"--out", {fmt::format("output directory: checkpoint-NNNNNN/ (Hugging Face format + training state), metrics.jsonl ({})", d.out), str(o.out), {}}},
      {"--resume", {"checkpoint directory (or an --out directory: its newest checkpoint) to continue from", str(o.resume), {}}},
      {"--eval-every", {fmt::format("evaluate on the held-out slice every N steps, 0 never ({})", d.eval_every), num(o.eval_every), {}}},
      {"--eval-instances", {fmt::format("held-out instances ({})", d.eval_instances), num(o.eval_instances), {}}},
      {"--save-every", {fmt::format("checkpoint every N steps, 0 only at the end ({})", d.save_every), num(o.save_every), {}}},
      {"--keep", {fmt::format("checkpoints kept ({})", d.keep_checkpoints), num(o.keep_checkpoints), {}}},
      {"--stop-at", {"stop after step N with a checkpoint, as an interruption would", num(o.stop_at), {}}},
      {"--log-every", {fmt::format("plain log line every N steps when not on a terminal ({})", d.log_every), num(o.log_every), {}}},
      {"--threads", {"threads (default: XGRAD_NUM_THREADS or all cores)", num(o.threads), {}}},
      {"--benchmark", {"time training steps on random token ids (honours --model --batch --seq-len --steps --threads); last line 'tokens/s: X'", {}, [&] { benchmark = true; }}},
  };
}

}  // namespace

int main(int argc, char** argv) {
  PretrainOptions opt;
  bool benchmark = false;
  auto table = flags(opt, benchmark);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      fmt::print("usage: bert_pretrain [flags]\nPre-trains BERT with masked-language-model and next-sentence losses.\n\n");
      for (auto& [name, f] : table) fmt::print("  {:<18} {}\n", name, f.help);
      fmt::print("\nCtrl-C saves a checkpoint and stops; --resume continues exactly where it stopped.\n");
      return 0;
    }
    auto it = table.find(a);
    if (it == table.end()) {
      fmt::print(stderr, "bert_pretrain: unknown flag '{}' (see --help)\n", a);
      return 2;
    }
    if (it->second.on) {
      it->second.on();
      continue;
    }
    if (i + 1 >= argc) {
      fmt::print(stderr, "bert_pretrain: {} needs a value\n", a);
      return 2;
    }
    try {
      it->second.set(argv[++i]);
    } catch (const std::exception&) {
      fmt::print(stderr, "bert_pretrain: bad value '{}' for {}\n", argv[i], a);
      return 2;
    }
  }
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
