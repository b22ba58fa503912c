// Fine-tunes a pre-trained checkpoint (any registered family) or a preset for a task: sentence
// or sentence-pair classification or regression, and the other kinds listed by --help (each a
// FinetuneKind, training/tasks/finetune_kinds.cpp). Evaluates on --dev each epoch and keeps the
// best model in OUT/best; --report writes the best model's final dev and test scores. See --help.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>

#include "models/core/checkpoint.hpp"
#include "nn/execution.hpp"
#include "training/benchmark.hpp"
#include "training/checkpoints.hpp"
#include "training/tasks/finetuning.hpp"
#include "training/tasks/learning_curve.hpp"
#include "training/tasks/multitask.hpp"
#include "training/run_summary.hpp"
#include "training/trainer.hpp"
#include "util/atomic_file.hpp"
#include "util/bundled_data.hpp"
#include "util/cli.hpp"

using xg::training::FinetuneOptions;
using xg::training::TrainerOptions;

namespace {
// Steps a learning curve's run takes at least: a few examples over 3 epochs make a handful of
// updates, and few-sample fine-tuning needs many more (Mosbach et al. 2021, "On the stability of
// fine-tuning BERT"; Zhang et al. 2021, "Revisiting few-sample BERT fine-tuning").
constexpr int64_t kCurveMinSteps = 200;

// Fine-tuning's usual ranges (BERT paper, appendix A.3), not pre-training's.
void set_finetuning_defaults(TrainerOptions& t) {
  t.lr = 5e-5f;
  t.batch = 32;
  t.epochs = 3;
  t.warmup_ratio = 0.1f;
  t.save_every = 0;   // one checkpoint at the end; the best one is kept apart
  t.eval_every = -1;  // once per epoch
}

// Whether the run (or, resuming, the run it continues) is a multi-task one.
bool is_multitask(const xg::training::MultiTaskOptions& m, const TrainerOptions& trainer) {
  if (!m.file.empty() || trainer.resume.empty()) return !m.file.empty();
  const auto state = xg::training::TrainingState::read(xg::training::resolve_checkpoint(trainer.resume));
  return !state.options.value("multi_task", std::string()).empty();
}

// The flags a multi-task run takes per task in tasks.json (or not at all): named when given.
void refuse_single_task_flags(const CLI::App& app) {
  std::vector<std::string> flags = {"--task",           "--train-file", "--validation-file", "--test-file",
                                    "--predictions",    "--learning-curve", "--benchmark", "--score-precision"};
  for (const auto& kind : xg::training::finetune_kinds()) {
    CLI::App own;
    kind->add_options(own);
    for (const CLI::Option* o : own.get_options())
      if (!o->get_lnames().empty() && o->get_lnames()[0] != "help") flags.push_back("--" + o->get_lnames()[0]);
  }
  for (const auto& f : flags) {
    if (!app.count(f)) continue;
    if (f == "--learning-curve" || f == "--benchmark")
      throw std::invalid_argument(fmt::format("--multi-task does not go with {}: it is for one task", f));
    throw std::invalid_argument(fmt::format("--multi-task takes no {}: give each task's data and kind flags in its tasks.json "
                                            "entry (\"train\", \"dev\", \"args\")", f));
  }
}

}  // namespace

int main(int argc, char** argv) {
  TrainerOptions trainer;
  trainer.default_out = "runs/bert_finetune";
  set_finetuning_defaults(trainer);
  FinetuneOptions task;
  std::string report;
  bool benchmark = false;
  CLI::App app("Fine-tunes a checkpoint (or a preset) for a task: text classification or regression by default.\n"
               "Evaluates on --validation-file every epoch (or every --eval-steps) and keeps the best model in\n"
               "OUTPUT_DIR/best"
               " (a Hugging Face directory of the head model). Exit status: 0 done, 1 error, 2 bad command line.",
               "bert_finetune");
  app.get_formatter()->column_width(34);
  TrainerOptions::table().add_to(app, trainer, xg::kTrainingGroup);  // first: its everyday flags lead their groups
  FinetuneOptions::table().add_to(app, task, xg::kModelAndDataGroup);
  std::string task_list;
  for (const auto& kind : xg::training::finetune_kinds()) {
    kind->add_options(app);
    for (const auto& name : kind->task_names()) task_list += (task_list.empty() ? "" : ", ") + name;
  }
  app.footer("Tasks (--task): " + task_list);
  xg::training::MultiTaskOptions multi;
  xg::training::MultiTaskOptions::table().add_to(app, multi, "Multi-task (one encoder, a head per task)");
  app.add_option("--report", report, "write the best model's final scores as one JSON object {\"dev\": {...}, \"test\": {...}} "
                                     "(with --learning-curve: every run's scores and the summary)")
      ->group(xg::kOutputGroup);
  xg::training::CurveOptions curve;
  std::string curve_sizes;
  app.add_option("--learning-curve", curve_sizes,
                 fmt::format("fine-tune on seeded samples of these sizes of the training set (e.g. 50,100,200,500,all), "
                             "--curve-seeds runs each, into OUT/curve/n<N>-seed<S>; writes OUT/learning_curve.csv (one row "
                             "of dev scores per run) and OUT/learning_curve_summary.csv (mean and sample std per size); its "
                             "runs train at least --min-steps (default {} here) and their checkpoints are deleted once scored; "
                             "run again, a stopped curve goes on where it stopped (--overwrite measures it afresh)",
                             kCurveMinSteps))
      ->group("Learning curves");
  xg::cli::add_number(app, "--curve-seeds", curve.seeds, "with --learning-curve: runs per size, seeded --seed, --seed + 1, ...")
      ->check(CLI::Range(1, 1000).description(""))
      ->type_name("INT")
      ->capture_default_str()
      ->group("Learning curves");
  app.add_flag("--curve-keep-checkpoints", curve.keep_checkpoints, "with --learning-curve: keep each run's OUT/best and checkpoints")
      ->group("Learning curves");
  app.add_flag("--benchmark", benchmark,
               "time --max-steps fine-tuning steps (default 5) of a sentence classifier of the --model preset on random "
               "ids (--per-device-train-batch-size x --max-seq-length, every token real, at --precision); prints examples/s last, and no training")
      ->group("Modes");
  if (auto code = xg::cli::parse_or_exit(app, argc, argv)) return *code;
  try {
    xg::nn::set_default_execution(xg::nn::ExecutionOptions::from_environment());  // the XGRAD_* switches, read once here
    if (const auto note = xg::training::steps_override_epochs(trainer, app.count("--max-steps") > 0, app.count("--num-train-epochs") > 0))
      fmt::print(stderr, "note: {}\n", *note);
    // the bundled default, found from any working directory (a resumed run keeps the checkpoint's)
    if (trainer.resume.empty() && !app.count("--tokenizer")) task.vocab = xg::bundled_data_path(task.vocab);
    if (trainer.resume.empty()) {  // a run's output directory stands for its best model or newest checkpoint
      std::string note;
      task.model = xg::models::model_directory_in(task.model, &note);
      if (!note.empty()) fmt::print(stderr, "note: --model-name-or-path {}\n", note);
    }
    // the files written at the end, checked before any training
    const auto inputs = xg::cli::given_files(app, {"--report", "--predictions", "--output-dir", "--tensorboard"});
    for (const auto& [flag, path] : {std::pair{"--report", report}, {"--predictions", task.predictions}})
      if (!path.empty())  // a new run creates its --output-dir (a resumed one writes into its own, which exists)
        xg::cli::check_output_file({flag, path}, inputs, trainer.resume.empty() ? (trainer.out.empty() ? trainer.default_out : trainer.out) : "");
    const bool multitask = is_multitask(multi, trainer);  // --multi-task, or resuming such a run
    if (multitask) refuse_single_task_flags(app);
    if (!multitask)
      for (const char* flag : {"--sampling", "--sampling-temperature"})
        if (app.count(flag)) throw std::invalid_argument(fmt::format("{} applies to --multi-task runs only", flag));
    if (benchmark && app.count("--learning-curve"))
      throw std::invalid_argument("--benchmark times steps on random ids: it takes no --learning-curve");
    if (benchmark) {
      if (!app.count("--max-steps")) trainer.steps = 5;
      fmt::print("benchmark: model {} (sequence classification, 2 labels), batch {} x {} tokens, {} timed steps, "
                 "precision {}\n", task.model, trainer.batch, task.max_len, trainer.steps, trainer.precision);
      const auto r = xg::training::run_finetune_benchmark(trainer, task.model, task.max_len);
      fmt::print("optimizer: {}\nparameters: {:.1f}M\nseconds/step: {:.3f}\npeak memory MB: {:.0f}\nexamples/s: {:.2f}\n", r.optimizer,
                 double(r.parameters) / 1e6, r.seconds_per_step, r.peak_rss_mb, r.tokens_per_s / double(task.max_len));
      return 0;
    }
    if (app.count("--warmup-steps") && !app.count("--warmup-ratio")) trainer.warmup_ratio = -1;  // steps given: they win
    // a resumed run takes from its checkpoint what the defaults above would otherwise change
    if (!trainer.resume.empty()) TrainerOptions::table().reset_not_given(trainer);
    const auto start = std::chrono::steady_clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    if (multitask) {
      const auto result = xg::training::run_multitask(trainer, task, multi);
      if (result.run.signal != 0) return 128 + result.run.signal;
      if (result.scores.is_null()) return 0;
      fmt::print("{}", xg::training::multitask_summary(result.scores, result.run.out, seconds()));
      if (!report.empty()) xg::write_text_atomically(report, result.scores.dump(2) + "\n");
      return 0;
    }
    if (app.count("--learning-curve")) {
      try {
        curve.sizes = xg::training::parse_curve_sizes(curve_sizes);
      } catch (const std::invalid_argument& e) {
        fmt::print(stderr, "{}\n", xg::cli::error_line("bert_finetune", e.what()));
        return 2;
      }
      if (!app.count("--min-steps")) trainer.min_steps = kCurveMinSteps;
      const auto result = xg::training::run_learning_curve(trainer, task, xg::training::finetune_kind(task.task), curve);
      fmt::print("learning curve (dev, mean ± sample std over seeds):\n{}", result.summary_table());
      if (!report.empty()) xg::write_text_atomically(report, result.to_json().dump(2) + "\n");
      return result.signal != 0 ? 128 + result.signal : 0;
    }
    task.task = xg::training::task_of_run(task, trainer);  // read once: run_finetuning keeps a task that is set
    auto& kind = xg::training::finetune_kind(task.task);
    const auto result = xg::training::run_finetuning(trainer, task, kind);
    if (result.run.signal != 0) return 128 + result.run.signal;  // saved and stopped: 130 after Ctrl-C, 143 after SIGTERM
    if (result.scores.is_null()) return 0;  // --stop-at (resumable, no final scores yet), or a rank other than 0
    const std::string best = (std::filesystem::path(result.run.out) / "best").string();
    const std::string infer = (std::filesystem::path(argv[0]).parent_path() / "bert_infer").string();  // beside this program
    const std::string use = kind.inference_command().empty() ? "" : fmt::format("{} {} --model {}", infer, kind.inference_command(), best);
    fmt::print("{}", xg::training::finetune_summary(result.scores, best, seconds(), use));
    if (!report.empty()) xg::write_text_atomically(report, result.scores.dump(2) + "\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", xg::cli::error_line("bert_finetune", e.what()));
    return 1;
  }
  return 0;
}
