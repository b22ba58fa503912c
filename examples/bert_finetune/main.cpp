// Fine-tunes a pre-trained checkpoint (any registered family) or a preset for sentence or
// sentence-pair classification or regression on labelled text, evaluating on --dev each epoch and
// keeping the best model in OUT/best; --report writes the best model's final dev and test scores.
// --task cola|sst2|...|boolq|cb|wic presets a GLUE/SuperGLUE task (--data-dir its folder) and
// writes its test predictions in the leaderboard's format. See --help.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <fstream>

#include "text/classification_data.hpp"
#include "training/benchmark.hpp"
#include "training/tasks/classification.hpp"
#include "training/trainer.hpp"
#include "util/atomic_file.hpp"

using xg::training::ClassificationOptions;
using xg::training::TrainerOptions;

namespace {
// Fine-tuning's usual ranges (BERT paper, appendix A.3), not pre-training's.
void set_finetuning_defaults(TrainerOptions& t) {
  t.lr = 5e-5f;
  t.batch = 32;
  t.epochs = 3;
  t.warmup_ratio = 0.1f;
  t.save_every = 0;  // one checkpoint at the end; the best one is kept apart
}
}  // namespace

int main(int argc, char** argv) {
  TrainerOptions trainer;
  trainer.default_out = "runs/bert_finetune";
  set_finetuning_defaults(trainer);
  ClassificationOptions task;
  std::string report;
  bool benchmark = false;
  CLI::App app("Fine-tunes a checkpoint (or a preset) for text classification or regression.\n"
               "Evaluates on --dev every epoch (or --eval-every N steps) and keeps the best model in OUT/best\n"
               "(a Hugging Face directory of the classifier). Exit status: 0 done, 1 error, 2 bad command line.",
               "bert_finetune");
  app.get_formatter()->column_width(34);
  ClassificationOptions::table().add_to(app, task, "Data and model");
  TrainerOptions::table().add_to(app, trainer, "Training");
  app.add_option("--report", report, "write the best model's final scores as one JSON object {\"dev\": {...}, \"test\": {...}}");
  app.add_flag("--benchmark", benchmark,
               "time --steps fine-tuning steps (default 5) of a sentence classifier of the --model preset on random "
               "ids (--batch x --max-len, every token real); prints examples/s last, and no training");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (benchmark) {
      if (!app.count("--steps")) trainer.steps = 5;
      fmt::print("benchmark: model {} (sequence classification, 2 labels), batch {} x {} tokens, {} timed steps (AdamW)\n",
                 task.model, trainer.batch, task.max_len, trainer.steps);
      const auto r = xg::training::run_finetune_benchmark(trainer, task.model, task.max_len);
      fmt::print("parameters: {:.1f}M\nseconds/step: {:.3f}\npeak memory MB: {:.0f}\nexamples/s: {:.2f}\n", double(r.parameters) / 1e6,
                 r.seconds_per_step, r.peak_rss_mb, r.tokens_per_s / double(task.max_len));
      return 0;
    }
    if (app.count("--warmup") && !app.count("--warmup-ratio")) trainer.warmup_ratio = -1;  // steps given: they win
    xg::training::apply_benchmark_task(task);  // --task's columns and --data-dir's files, before the train file is read
    if (!app.count("--eval-every") && trainer.resume.empty()) {
      // once per epoch: the optimizer steps one pass over the training data takes
      if (task.train.empty()) throw std::invalid_argument("[classification] --train is required");
      const size_t examples = xg::text::read_text_examples(task.train, {task.label_column, task.text_column,
                                                                        task.text_b_column, task.skip_header}).size();
      const size_t per_step = trainer.batch * trainer.grad_accum;
      trainer.eval_every = int64_t((examples + per_step - 1) / per_step);
    }
    const auto result = xg::training::run_finetuning(trainer, task);
    if (result.run.signal != 0) return 128 + result.run.signal;  // saved and stopped: 130 after Ctrl-C, 143 after SIGTERM
    if (result.scores.is_null()) return 0;                         // --stop-at: resumable, no final scores yet
    fmt::print("final scores of the best model: {}\n", result.scores.dump());
    if (!report.empty()) xg::write_text_atomically(report, result.scores.dump(2) + "\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "bert_finetune: {}\n", e.what());
    return 1;
  }
  return 0;
}
