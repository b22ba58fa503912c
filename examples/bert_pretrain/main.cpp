// Pre-trains BERT (MLM + NSP), RoBERTa (MLM on full sentences) or ALBERT (MLM + SOP) from raw text
// or shards. With no flags: a small BERT on the bundled corpus for a few minutes. See --help.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "util/bundled_data.hpp"
#include "util/cli.hpp"
#include "models/core/checkpoint.hpp"
#include "nn/execution.hpp"
#include "training/benchmark.hpp"
#include "training/tasks/pretraining.hpp"
#include "training/trainer.hpp"

using xg::training::PretrainOptions;
using xg::training::TrainerOptions;

namespace {
// The quick-start recipe, what a run with no flags trains (docs/pretraining.md, "What the default run learns"):
// 3000 steps of 32 sequences of 64 tokens (about 5 minutes of the tiny model on two cores) with a
// WordPiece vocabulary of 8000 tokens trained on the corpus first (BERT's 30522 leave most rows
// barely trained on a few MB of text). It clears the most-frequent-token baseline twice over, where
// 800 steps of 16 x 128 with BERT's vocabulary stopped at the frequency plateau.
void set_quick_start_defaults(TrainerOptions& t, PretrainOptions& p) {
  t.batch = 32;
  t.steps = 3000;
  p.seq_len = 64;
}

// After parsing: a text corpus with no vocabulary chosen gets one trained on it (shards were made
// with a vocabulary, and --init-from brings one). A resumed run takes all of these from its
// checkpoint; left at the recipe's values they would read as flags given ("--per-device-train-batch-size 32 differs").
void finish_quick_start_defaults(const CLI::App& app, TrainerOptions& t, PretrainOptions& p) {
  if (!t.resume.empty()) {
    TrainerOptions::table().reset_not_given(t);
    PretrainOptions::table().reset_not_given(p);
    return;
  }
  const bool vocabulary_chosen = app.count("--tokenizer") || app.count("--train-vocab") || !p.init_from.empty();
  if (!vocabulary_chosen && !std::filesystem::is_directory(p.corpus)) p.train_vocab = PretrainOptions::kDefaultTrainedVocab;
}
}  // namespace

int main(int argc, char** argv) {
  TrainerOptions trainer;
  PretrainOptions task;
  set_quick_start_defaults(trainer, task);
  bool benchmark = false, eval_only = false;
  CLI::App app("Pre-trains BERT (masked-language-model + next-sentence losses), RoBERTa (masked-language-model on\n"
               "full-sentence sequences) or ALBERT (masked-language-model + sentence-order losses): --model.\n"
               "Ctrl-C (or SIGTERM) saves a checkpoint and stops with exit status 130 (143); under mpirun, send\n"
               "SIGUSR1 to mpirun instead (exit 138): it kills the ranks a second after passing SIGINT or SIGTERM\n"
               "on. --resume-from-checkpoint continues exactly where it stopped. With no --tokenizer, a text\n"
               "corpus gets a vocabulary of 8000 tokens trained on it. Exit status: 0 done, 1 error, 2 bad\n"
               "command line.",
               "bert_pretrain");
  app.get_formatter()->column_width(34);
  TrainerOptions::table().add_to(app, trainer, xg::kTrainingGroup);
  PretrainOptions::table().add_to(app, task, xg::kModelAndDataGroup);
  app.add_flag("--benchmark", benchmark,
               "time training steps on random token ids (honours --model --per-device-train-batch-size --max-seq-length "
               "--max-steps --threads --precision "
               "--optimizer; by default the recipe's optimizer, LAMB for ALBERT, as training steps it); "
               "last line 'tokens/s: X'")
      ->group("Modes");
  app.add_flag("--eval-only", eval_only,
               "evaluate the --init-from checkpoint (extended per --extend-vocab) on the corpus's held-out documents, as "
               "training would, and stop; then one 'name: value' line per metric (mlm_acc, perplexity, ...)")
      ->group("Modes");
  if (auto code = xg::cli::parse_or_exit(app, argc, argv)) return *code;
  try {
    xg::nn::set_default_execution(xg::nn::ExecutionOptions::from_environment());  // the XGRAD_* switches, read once here
    if (const auto note = xg::training::steps_override_epochs(trainer, app.count("--max-steps") > 0, app.count("--num-train-epochs") > 0))
      fmt::print(stderr, "note: {}\n", *note);
    // the bundled default, found from any working directory (a resumed run keeps the checkpoint's)
    if (trainer.resume.empty() && !app.count("--train-file")) task.corpus = xg::bundled_data_path(task.corpus);
    if (trainer.resume.empty() && !app.count("--max-seq-length"))  // shards: the length they were made at
      if (const size_t made_at = xg::training::shard_sequence_length(task.corpus); made_at > 0 && made_at != task.seq_len) {
        fmt::print(stderr, "note: training at --max-seq-length {}, the length the shards in {} were made at\n", made_at, task.corpus);
        task.seq_len = made_at;
      }
    if (trainer.resume.empty() && !task.init_from.empty()) {  // a run's output directory: its newest checkpoint
      std::string note;
      task.init_from = xg::models::model_directory_in(task.init_from, &note);
      if (!note.empty()) fmt::print(stderr, "note: --init-from {}\n", note);
    }
    if (benchmark) {
      if (!app.count("--max-steps")) trainer.steps = 10;
      fmt::print("benchmark: model {} ({}), batch {} x {} tokens, {} timed steps (MLM at 15% of positions), precision {}\n",
                 task.model_or_default(), xg::training::pretraining_architecture(task), trainer.batch, task.seq_len, trainer.steps,
                 trainer.precision);
      const auto r = xg::training::run_benchmark(trainer, task);
      fmt::print("optimizer: {}\nparameters: {:.1f}M\nseconds/step: {:.3f}\npeak memory MB: {:.0f}\ntokens/s: {:.1f}\n",
                 r.optimizer, double(r.parameters) / 1e6, r.seconds_per_step, r.peak_rss_mb, r.tokens_per_s);
      return 0;
    }
    if (eval_only) {
      const auto e = xg::training::evaluate_pretraining(trainer, task);
      if (e.result.metrics.empty()) throw std::invalid_argument(fmt::format("{}: no held-out documents (it needs 2 or more)", task.corpus));
      fmt::print("{}\nheld-out: {}\n", e.data, e.result.summary);
      for (const auto& [name, value] : e.result.metrics) fmt::print("{}: {:.6g}\n", name, value);
      return 0;
    }
    finish_quick_start_defaults(app, trainer, task);
    const auto result = xg::training::run_pretraining(trainer, task);
    if (result.signal != 0) return 128 + result.signal;  // saved and stopped: 130 after Ctrl-C, 143 after SIGTERM
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", xg::cli::error_line("bert_pretrain", e.what()));
    return 1;
  }
  return 0;
}
