#include "training/trainer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "autograd/parallel.hpp"
#include "models/core/memory_estimate.hpp"
#include "nn/transformer.hpp"
#include "optim/optim.hpp"
#include "training/builtin_callbacks.hpp"
#include "training/checkpoints.hpp"
#include "training/distributed.hpp"
#include "training/grad_sync.hpp"
#include "training/output_dir.hpp"
#include "training/rank_checks.hpp"
#include "training/training_loop.hpp"
#include "util/checksums.hpp"

namespace fs = std::filesystem;

namespace xg::training {

namespace {
const Choices kPrecisions{{"fp32", "bf16"}};
}  // namespace

MatmulPrecision training_precision(const TrainerOptions& opt) {
  option_detail::check_choice(opt.precision, kPrecisions, "--precision");  // as the command line words it
  return matmul_precision_from_name(opt.precision);
}

MatmulPrecision run_precision(const TrainerOptions& opt) {
  if (opt.resume.empty()) return training_precision(opt);
  TrainerOptions saved = opt;
  saved.precision = TrainingState::read(resolve_checkpoint(opt.resume)).options.value("precision", std::string("fp32"));
  return training_precision(saved);
}

const OptionTable<TrainerOptions>& TrainerOptions::table() {
  using O = TrainerOptions;
  constexpr OnResume kRestore = OnResume::Restore;
  static const OptionTable<O> t = OptionTable<O>()
      .add("--learning-rate,--lr", &O::lr, "peak learning rate", kRestore, at_least(0))
      .add("--per-device-train-batch-size,--batch", &O::batch, "examples per micro-batch (of each rank, under mpirun)", kRestore, at_least(1))
      .add("--num-train-epochs,--epochs", &O::epochs, "passes over the training data, setting --max-steps (0, or --max-steps given: --max-steps decides)", kRestore)
      .add("--max-steps,--steps", &O::steps, "optimizer steps of the whole run", kRestore, at_least(1))
      .add("--warmup-ratio", &O::warmup_ratio, "warm-up as a fraction of the run's steps, instead of --warmup-steps (-1: not used)",
           kRestore, between(-1, 1))
      .add("--warmup-steps,--warmup", &O::warmup, "warm-up steps (-1: 10% of --max-steps)", kRestore, at_least(-1))
      .add("--weight-decay", &O::weight_decay, "decoupled weight decay, not on biases, LayerNorm weights or other vectors", kRestore, at_least(0))
      .add("--gradient-accumulation-steps,--grad-accum", &O::grad_accum, "micro-batches per optimizer step", kRestore, at_least(1))
      .add("--seed", &O::seed, "seed for weights, data order, masks and dropout", kRestore)
      .add("--schedule", &O::schedule, "after warm-up: linear, cosine, polynomial, inverse_sqrt or constant", kRestore,
           Choices{{"linear", "cosine", "polynomial", "inverse_sqrt", "constant"}})
      .add("--optimizer", &O::optimizer, "auto (the model's recipe: LAMB for ALBERT, AdamW otherwise), adamw or lamb", kRestore,
           Choices{{"auto", "adamw", "lamb"}})
      .add("--min-steps", &O::min_steps, "with --num-train-epochs: train at least this many steps (a few examples make few "
                                         "steps per epoch); a run so lengthened evaluates 10 times, not each epoch (0: no minimum)",
           kRestore, at_least(0))
      .add("--beta2", &O::beta2, "Adam/LAMB second-moment decay (0: the model's recipe: RoBERTa 0.98, else 0.999)",
           kRestore, between(0, 0.99999999))
      .add("--eps", &O::eps, "Adam/LAMB epsilon (0: the model's recipe: RoBERTa 1e-6, AdamW 1e-8, LAMB 1e-6)", kRestore,
           between(0, 1))
      .add("--clip", &O::clip, "global gradient-norm clip, 0 to disable", kRestore, at_least(0))
      .group(kOutputGroup)
      .add("--output-dir,--out", &O::out, "output directory: checkpoint-NNNNNN/ (Hugging Face format + training state), "
                                          "metrics.jsonl; locked while the run lasts (default: runs/<program name>; with "
                                          "--resume-from-checkpoint: the resumed run's directory)")
      .add("--overwrite", &O::overwrite, "let a new run replace the checkpoints and metrics of an earlier run in --output-dir")
      .add("--resume-from-checkpoint,--resume", &O::resume, "checkpoint directory (or an --output-dir: its newest checkpoint) to "
                                                            "continue from; the settings saved with it are kept")
      .add("--eval-steps,--eval-every", &O::eval_every, "evaluate on the held-out data every N steps, 0 never, -1 once per epoch", OnResume::UseNew, at_least(-1))
      .add("--save-steps,--save-every", &O::save_every, "checkpoint every N steps, 0 only at the end", OnResume::UseNew, at_least(0))
      .add("--save-total-limit,--keep", &O::keep_checkpoints, "checkpoints kept", OnResume::UseNew, at_least(1))
      .add("--logging-steps,--log-every", &O::log_every, "log line and metrics row every N steps", OnResume::UseNew, at_least(1))
      .add("--tensorboard", &O::tensorboard, "also write TensorBoard event files to this directory")
      .add("--stop-at", &O::stop_at, "stop after step N with a checkpoint, as an interruption would (-1: no)", OnResume::UseNew, at_least(-1))
      .group(kPerformanceGroup)
      .add("--precision", &O::precision, "fp32, or bf16: the linear layers' GEMMs (forward and both backward) on "
                                         "bf16-rounded operands with fp32 sums; weights, gradients, optimizer state, "
                                         "attention, softmax, LayerNorm and losses stay fp32", kRestore, kPrecisions)
      .add_shorthand("--bf16", "--precision", &O::precision, "bf16", "the same as --precision bf16")
      .add("--padding-free", &O::padding_free, "run the encoder layers on each batch's real tokens only (packed, no "
                                               "padding; rows at padded positions are zero, not what transformers "
                                               "computes there, and question answering leaves them out of its loss)",
           kRestore)
      .add("--threads", &O::threads, "threads (0: XGRAD_NUM_THREADS or the cores this process may use)", OnResume::UseNew, between(0, 4096))
      .group(kDistributedGroup)
      .add("--check-every", &O::check_every, "compare the ranks' weights every N steps, stopping if they differ (0: never)",
           OnResume::UseNew, at_least(0))
      .add("--bucket-mb", &O::bucket_mb, "megabytes of gradients per all-reduce, started as backward finishes each bucket",
           OnResume::UseNew, at_least(1))
      .add("--collective-timeout", &O::collective_timeout, "seconds a rank waits in one collective before it asks the others "
                                                           "whether they are alive and ends the job naming those that do not "
                                                           "answer (a rank stopped or hung); 0: wait forever",
           OnResume::UseNew, at_least(0))
      .group(kAdvancedGroup)
      .add("--on-nonfinite", &O::on_nonfinite, "at a NaN or infinite loss or gradient: stop (before the update, naming the "
                                               "step) or skip (that step's update)", OnResume::UseNew, Choices{{"stop", "skip"}})
      .add("--detect-anomaly", &O::detect_anomaly, "check every op's output and gradient: name the op that makes the first "
                                                   "NaN or infinity (slow; to debug a run that diverges)");
  return t;
}

std::optional<std::string> steps_override_epochs(TrainerOptions& t, bool steps_given, bool epochs_given) {
  if (!steps_given || !t.resume.empty()) return std::nullopt;
  const size_t epochs = t.epochs;
  t.epochs = 0;
  if (!epochs_given || epochs == 0) return std::nullopt;
  return fmt::format("--max-steps {} overrides --num-train-epochs {}, as in transformers", t.steps, epochs);
}

void refuse_if_too_big_to_train(const nlohmann::json& config, size_t batch, size_t seq_len, size_t max_predictions,
                                bool checkpoint_activations) {
  models::refuse_if_too_big(
      models::training_memory(config, batch, seq_len, max_predictions, checkpoint_activations), config, "training",
      batch == 0 ? "" : fmt::format("--per-device-train-batch-size {} x --max-seq-length {}", batch, seq_len));
}

void set_padding_free(nn::Module& model, bool padding_free) {
  nn::ExecutionOptions execution = model.execution();
  execution.padding_free = execution.padding_free || padding_free;
  model.set_execution(execution);
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainerOptions& o, std::vector<optim::ParamGroup> groups,
                                                 const OptimizerDefaults& recipe) {
  const std::string name = o.optimizer != "auto" ? o.optimizer : recipe.optimizer.value_or("adamw");
  auto pick = [](float flag, std::optional<float> from_task, float own) { return flag > 0 ? flag : from_task.value_or(own); };
  if (name == "adamw") {
    optim::AdamOptions a;
    a.beta2 = pick(o.beta2, recipe.beta2, a.beta2);
    a.eps = pick(o.eps, recipe.eps, a.eps);
    return std::make_unique<optim::AdamW>(groups, o.lr, a);
  }
  if (name == "lamb") {
    optim::LambOptions l;
    l.beta2 = pick(o.beta2, recipe.beta2, l.beta2);
    l.eps = pick(o.eps, recipe.eps, l.eps);
    return std::make_unique<optim::Lamb>(groups, o.lr, l);
  }
  throw std::invalid_argument(fmt::format("[trainer] --optimizer {}: use auto, adamw or lamb", name));
}

namespace {

// A fresh run's --steps (from --epochs, lengthened to --min-steps), warm-up and --eval-every; a
// resumed run has the first two from its checkpoint. --min-steps lengthens a run of few examples;
// the resumed run of one knows it from the same options.
void plan_steps(TrainerOptions& opt, Task& task, size_t ranks, bool fresh, const std::function<void(const std::string&)>& say) {
  const size_t per_step = opt.batch * opt.grad_accum * ranks;
  const int64_t epoch_steps =
      opt.epochs > 0 ? int64_t((opt.epochs * task.train_examples_per_epoch() + per_step - 1) / per_step) : 0;
  const bool lengthened = opt.epochs > 0 && epoch_steps < opt.min_steps;
  if (fresh) {
    if (opt.epochs > 0) opt.steps = lengthened ? opt.min_steps : epoch_steps;
    if (lengthened) say(fmt::format("{} epochs are {} steps: training {} (--min-steps)", opt.epochs, epoch_steps, opt.steps));
    if (opt.steps <= 0) throw std::invalid_argument(fmt::format("[trainer] --max-steps {} must be positive", opt.steps));
    // as transformers rounds it, short of the whole run (a schedule must have steps after its warm-up)
    if (opt.warmup_ratio >= 0)
      opt.warmup = std::min(int64_t(std::ceil(double(opt.warmup_ratio) * double(opt.steps))), opt.steps - 1);
    if (opt.warmup < 0) opt.warmup = opt.steps / 10;
  }
  if (opt.eval_every < 0 && lengthened) {  // evaluating each of many short epochs would cost more than the training
    opt.eval_every = std::max<int64_t>(1, (opt.steps + 9) / 10);
  } else if (opt.eval_every < 0) {  // once per epoch: the steps one pass over the training data takes (all ranks')
    opt.eval_every = std::max<int64_t>(1, int64_t((task.train_examples_per_epoch() + per_step - 1) / per_step));
  }
}
}  // namespace

Trainer::Trainer(TrainerOptions options, BoundOptions task_options, TaskFactory make_task)
    : opt_(std::move(options)), task_options_(std::move(task_options)), make_task_(std::move(make_task)) {}

namespace {
// The run directory of a checkpoint directory: where --resume without --out keeps writing.
std::string run_directory_of(const std::string& checkpoint) {
  fs::path p = fs::path(checkpoint).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "D/checkpoint-000010/"
  const fs::path parent = p.parent_path();
  return parent.empty() ? "." : parent.string();
}

void say_unless_quiet(const TrainerOptions& opt, const std::string& s) {
  if (opt.quiet) return;
  fmt::print("{}\n", s);
  std::fflush(stdout);  // logs redirected to a file show progress as it happens
}

// The values of `settings` (a run's saved options) that name existing files or directories: what
// the run reads (its data, tokenizer, model, the checkpoint it starts from).
std::vector<std::string> existing_paths(const nlohmann::json& settings) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& [key, value] : settings.items())
    if (value.is_string() && !value.get<std::string>().empty() && fs::exists(value.get<std::string>(), ec))
      paths.push_back(value.get<std::string>());
  return paths;
}

bool same_directory(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}
}  // namespace

RunResult Trainer::run() {
  Communicator& comm = Communicator::world();
  if (!comm.distributed()) return run_on_this_rank();
  comm.set_collective_timeout(opt_.collective_timeout);
  try {
    return run_on_this_rank();
  } catch (const CollectiveError&) {
    throw;  // every rank stops here with the same message
  } catch (const std::exception& e) {
    // Only this rank saw it: the others would wait for it in their next collective.
    fmt::print(stderr, "rank {}: {}\n[distributed] rank {} stopped with an error: ending every rank\n", comm.rank(), e.what(),
               comm.rank());
    std::fflush(stderr);
    comm.abort(1);
  }
}

RunResult Trainer::run_on_this_rank() {
  TrainerOptions& opt = opt_;
  Communicator& comm = Communicator::world();
  if (comm.rank() != 0) opt.quiet = true;  // rank 0 speaks for the run
  if (opt.threads > 0) set_num_threads(opt.threads);
  auto say = [&](const std::string& s) { say_unless_quiet(opt, s); };
  // The same command line on every rank, run control included (--resume-from-checkpoint and
  // --stop-at decide which collectives a rank enters). What only rank 0 reads may differ
  // (TensorBoard, --overwrite, the spelling of --resume-from-checkpoint: rank 0 resolves it for
  // all), as may the thread count.
  nlohmann::json given = TrainerOptions::table().given(opt);
  for (const char* rank0_only : {"threads", "tensorboard", "overwrite"}) given.erase(rank0_only);
  given["resume_from_checkpoint"] = !opt.resume.empty();
  check_same_settings(comm, given);

  // ---- resume: the checkpoint decides everything that shapes data and updates ----
  std::string ckpt;
  TrainingState state;
  // (Each step that can fail on its own runs under fail_together: every rank ends with its error.)
  if (!opt.resume.empty()) {
    // Rank 0 picks the checkpoint (a run directory's newest) for every rank: ranks resolving it
    // themselves could see different newest ones on a shared file system and start at different steps.
    fail_together(comm, [&] {
      if (comm.rank() == 0) ckpt = resolve_checkpoint(opt.resume);
    });
    comm.broadcast(ckpt, 0);
  }
  fail_together(comm, [&] {
    if (!ckpt.empty()) {
      verify_checksums(ckpt);  // flipped bits would otherwise train on silently
      state = TrainingState::read(ckpt);
      const std::string source = (fs::path(ckpt) / "training_state.json").string();
      TrainerOptions::table().restore(opt, state.options, source);
      task_options_.restore(state.options, source);
    }
    TrainerOptions::table().check(opt);
    task_options_.check();
  });
  nlohmann::json settings = TrainerOptions::table().saved(opt);
  settings.update(task_options_.saved());
  check_same_settings(comm, settings);
  if (opt.out.empty()) opt.out = ckpt.empty() ? opt.default_out : run_directory_of(ckpt);
  std::optional<OutputDirectory> out_dir;  // rank 0 writes (and locks) it
  bool started = false;
  try {
    fail_together(comm, [&] {  // also a barrier: the others build their task (which may read --out) once it exists
      if (comm.rank() == 0)
        out_dir.emplace(opt.out, !ckpt.empty() && same_directory(run_directory_of(ckpt), opt.out), opt.overwrite,
                        existing_paths(settings));
    });
    if (out_dir && !out_dir->cleared().empty())
      say(fmt::format("removed {} from {}: left by a start stopped before its first step", fmt::join(out_dir->cleared(), ", "),
                      opt.out));
    if (!ckpt.empty()) say(fmt::format("resuming from {} (step {}), writing into {}", ckpt, state.step, opt.out));
    RunResult result = train(ckpt, state, started, out_dir ? &*out_dir : nullptr);
    result.out = opt.out;
    comm.barrier();  // rank 0's last checkpoint is written when run() returns, on every rank
    if (out_dir) started ? out_dir->drop_replaced() : out_dir->discard_start();  // a run with nothing to do changes nothing
    return result;
  } catch (...) {
    // a run that never started leaves the directory as it found it
    if (out_dir) started ? out_dir->drop_replaced() : out_dir->discard_start();
    throw;
  }
}

RunResult Trainer::train(const std::string& ckpt, const TrainingState& state, bool& started, OutputDirectory* out_dir) {
  TrainerOptions& opt = opt_;
  auto say = [&](const std::string& s) { say_unless_quiet(opt, s); };
  Communicator& comm = Communicator::world();
  const bool writer = comm.rank() == 0;
  // Each setup step that can fail runs under fail_together, so that every rank ends with the error
  // (an error in the loop below still ends the job through MPI_Abort: the others wait in its
  // all-reduces). The task's vocabulary agreement nests inside the task's (see fail_together).
  std::vector<std::unique_ptr<MetricsSink>> sinks;
  fail_together(comm, [&] {
    if (writer) sinks = make_sinks(opt.out, opt.tensorboard, ckpt.empty() ? -1 : state.step);
  });

  // ---- the task (model and data), optimizer, schedule ----
  std::unique_ptr<Task> task;
  fail_together(comm, [&] {
    task = make_task_({ckpt, opt.out, opt.seed, opt.quiet, opt.batch});
    if (out_dir) out_dir->set_aside_models();  // after the task loaded its model (maybe from OUT/best)
    if (!state.task.empty() && state.task != task->name())
      throw std::invalid_argument(fmt::format("[resume] {} is a checkpoint of task '{}', not '{}'", ckpt, state.task, task->name()));
    if (comm.distributed()) {
      if (!task->splits_batches())  // a plain error, not a CollectiveError: the agreement passes it to every rank
        throw std::invalid_argument(fmt::format("[trainer] task '{}' cannot split its batches across ranks yet: run it without mpirun",
                                          task->name()));
      task->set_data_shard(size_t(comm.rank()), size_t(comm.size()));
    }
    plan_steps(opt, *task, size_t(comm.size()), ckpt.empty(), say);
  });
  MatmulPrecisionGuard precision(training_precision(opt));  // for training and evaluation alike
  nn::Module& model = task->model();
  set_padding_free(model, opt.padding_free);
  std::unique_ptr<optim::Optimizer> optimizer;
  fail_together(comm, [&] {
    model.train();
    // One block for the weights, one for the gradients: zeroing, clipping and the update are single passes.
    if (!model.arena()) model.flatten_parameters();
    optimizer = make_optimizer(opt, task->parameter_groups(opt.weight_decay), task->optimizer_defaults());
    optimizer->bind(*model.arena());  // its moments as flat blocks beside the arena: one update pass
  });
  // every rank built the same model with the same weights (loaded, resumed or initialised), before
  // the buckets are cut from its layout
  check_same_parameters(comm, *model.arena(), -1);
  std::unique_ptr<GradientSync> sync;
  if (comm.distributed()) sync = std::make_unique<GradientSync>(comm, *model.arena(), opt.bucket_mb << 20);
  optim::LrSchedule schedule = state.schedule;  // a resumed run follows the schedule it saved
  int64_t step = 0;
  fail_together(comm, [&] {
    if (ckpt.empty()) schedule = {optim::LrSchedule::kind_from_name(opt.schedule), opt.lr, opt.warmup, opt.steps, 0.f, 1.f};
    schedule.validate();
    if (ckpt.empty()) return;
    optimizer->load_state((fs::path(ckpt) / "optimizer").string());
    step = state.step;
    task->restore_data_state(state.data);
    default_generator().set_state(state.rng);
  });
  if (!ckpt.empty()) {
    if (state.world_size != comm.size())
      say(fmt::format("note: the checkpoint was written by {} rank(s), this run has {}: the data goes on from the next unread "
                      "example, in global batches of {} x {} examples", state.world_size, comm.size(), comm.size(), opt.batch));
  } else {
    manual_seed(opt.seed);  // dropout draws from the default generator
  }
  if (step >= opt.steps || state.stopped_early || (opt.stop_at >= 0 && step >= opt.stop_at)) {
    say(state.stopped_early ? fmt::format("the run stopped early at step {} (the task asked it to); nothing to do", step)
        : step >= opt.steps ? fmt::format("already at step {} of {}; nothing to do", step, opt.steps)
                            : fmt::format("already at step {}, --stop-at {}; nothing to do", step, opt.stop_at));
    started = !ckpt.empty();  // a fresh run told to stop at step 0 leaves --out as it found it
    return {step, 0, {}};  // (run() fills in out)
  }
  say(fmt::format("{}; {} steps of {} x {} examples; {} threads{}", task->describe(), opt.steps, opt.batch, opt.grad_accum,
                  num_threads(), opt.precision == "bf16" ? "; bf16 linear-layer GEMMs, fp32 weights" : ""));
  if (sync)
    say(fmt::format("data-parallel over {} ranks: global batch {} x {} x {} examples, gradients all-reduced in {} buckets",
                    comm.size(), comm.size(), opt.batch, opt.grad_accum, sync->bucket_count()));

  // ---- checkpoints: the task's files, then the optimizer and training state, swapped in whole ----
  auto save = [&](int64_t at_step, bool stopped_early) -> std::string {
    const std::string dir = (fs::path(opt.out) / checkpoint_name(at_step)).string();
    if (!writer) return dir;  // rank 0 writes it
    TrainingState now{at_step, default_generator().state(), schedule, TrainerOptions::table().saved(opt), task->data_state(),
                      task->name(), comm.size(), stopped_early};
    now.options.update(task_options_.saved());  // json keys differ: they come from distinct flags
    task->save(dir, [&](const std::string& tmp) {
      optimizer->save_state((fs::path(tmp) / "optimizer").string());
      now.write(tmp);
      write_checksums(tmp);  // last: it covers every file of the checkpoint
    });
    prune_checkpoints(opt.out, opt.keep_checkpoints, at_step);
    return dir;
  };

  // ---- the loop, with the Trainer's callbacks before the caller's ----
  StepCadence cadence(opt.log_every, opt.eval_every, opt.save_every, opt.stop_at);
  StopOnSignals stop_signals;
  ConsoleProgress console(opt.steps, opt.quiet);
  MetricsLogging metrics_logging(std::move(sinks));
  std::optional<RankWeightCheck> weight_check;
  if (sync) weight_check.emplace(comm, *model.arena(), opt.check_every);
  TrainingLoop loop{opt, *task, *optimizer, schedule, comm, sync.get(), {&cadence, &stop_signals, &console, &metrics_logging}, save,
                    [&] {
                      if (out_dir) out_dir->drop_replaced();  // the earlier run's files, kept until now
                      started = true;
                    }};
  if (weight_check) loop.callbacks.push_back(&*weight_check);
  for (const auto& c : callbacks_) loop.callbacks.push_back(c.get());
  const LoopState end = loop.run(step, ckpt);
  return {end.step, end.signal, {}};
}

}  // namespace xg::training
