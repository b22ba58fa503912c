#include "training/trainer.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "autograd/parallel.hpp"
#include "optim/optim.hpp"
#include "training/checkpoints.hpp"
#include "util/progress.hpp"

namespace fs = std::filesystem;

namespace xg::training {

const OptionTable<TrainerOptions>& TrainerOptions::table() {
  using O = TrainerOptions;
  constexpr OnResume kRestore = OnResume::Restore;
  static const OptionTable<O> t = OptionTable<O>()
      .add("--batch", &O::batch, "examples per micro-batch", kRestore, at_least(1))
      .add("--grad-accum", &O::grad_accum, "micro-batches per optimizer step", kRestore, at_least(1))
      .add("--lr", &O::lr, "peak learning rate", kRestore, at_least(0))
      .add("--warmup", &O::warmup, "warm-up steps (-1: 10% of --steps)", kRestore, at_least(-1))
      .add("--steps", &O::steps, "optimizer steps of the whole run", kRestore, at_least(1))
      .add("--epochs", &O::epochs, "passes over the training data, setting --steps (0: use --steps)", kRestore)
      .add("--schedule", &O::schedule, "after warm-up: linear, cosine, polynomial, inverse_sqrt or constant", kRestore)
      .add("--optimizer", &O::optimizer, "adamw or lamb", kRestore)
      .add("--weight-decay", &O::weight_decay, "decoupled weight decay, not on biases and LayerNorm", kRestore, at_least(0))
      .add("--clip", &O::clip, "global gradient-norm clip, 0 to disable", kRestore, at_least(0))
      .add("--seed", &O::seed, "seed for weights, data order, masks and dropout", kRestore)
      .add("--out", &O::out, "output directory: checkpoint-NNNNNN/ (Hugging Face format + training state), metrics.jsonl")
      .add("--resume", &O::resume, "checkpoint directory (or an --out directory: its newest checkpoint) to continue from; "
                                   "the settings saved with it are kept")
      .add("--tensorboard", &O::tensorboard, "also write TensorBoard event files to this directory")
      .add("--eval-every", &O::eval_every, "evaluate on the held-out data every N steps, 0 never", OnResume::UseNew, at_least(0))
      .add("--save-every", &O::save_every, "checkpoint every N steps, 0 only at the end", OnResume::UseNew, at_least(0))
      .add("--keep", &O::keep_checkpoints, "checkpoints kept", OnResume::UseNew, at_least(1))
      .add("--stop-at", &O::stop_at, "stop after step N with a checkpoint, as an interruption would (-1: no)", OnResume::UseNew, at_least(-1))
      .add("--log-every", &O::log_every, "log line and metrics row every N steps", OnResume::UseNew, at_least(1))
      .add("--threads", &O::threads, "threads (0: XGRAD_NUM_THREADS or all cores)", OnResume::UseNew, between(0, 4096));
  return t;
}

namespace {

std::atomic<bool> g_interrupted{false};
void on_sigint(int) { g_interrupted = true; }

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, const nn::Module& m, float lr, float wd) {
  auto groups = optim::bert_param_groups(m.named_parameters(), wd);  // no decay on biases and LayerNorm
  if (name == "adamw") return std::make_unique<optim::AdamW>(groups, lr);
  if (name == "lamb") return std::make_unique<optim::Lamb>(groups, lr);
  throw std::invalid_argument(fmt::format("[trainer] --optimizer {}: use adamw or lamb", name));
}

// What the steps since the last log line add up to.
struct Window {
  int64_t steps = 0;
  double loss = 0, tokens = 0;
  Scalars parts;  // summed, in the task's order
  Counts counts;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  // One micro-batch of `micro_batches` in a step: its losses count 1 / micro_batches.
  void add(const BatchLoss& b, size_t micro_batches) {
    loss += double(b.loss.item()) / double(micro_batches);
    for (const auto& [name, v] : b.parts) {
      // (a lambda may not capture a structured binding before C++20: clang refuses it)
      auto it = std::find_if(parts.begin(), parts.end(), [&part = name](const auto& p) { return p.first == part; });
      if (it == parts.end()) parts.emplace_back(name, v / double(micro_batches));
      else it->second += v / double(micro_batches);
    }
    for (const auto& [name, v] : b.counts) counts[name] += v;
    tokens += double(b.tokens);
  }
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
  // "loss 2.3456 (mlm 2.1000, nsp 0.2456)"
  std::string loss_text() const {
    std::string s = fmt::format("loss {:.4f}", loss / double(steps));
    for (size_t i = 0; i < parts.size(); ++i)
      s += fmt::format("{}{} {:.4f}", i == 0 ? " (" : ", ", parts[i].first, parts[i].second / double(steps));
    return parts.empty() ? s : s + ")";
  }
  Scalars scalars(const Task& task) const {
    Scalars s = {{"loss", loss / double(steps)}};
    for (const auto& [name, v] : parts) s.emplace_back(name + "_loss", v / double(steps));
    for (const auto& m : task.train_metrics(counts)) s.push_back(m);
    return s;
  }
};

void write_all(std::vector<std::unique_ptr<MetricsSink>>& sinks, int64_t step, const Scalars& s) {
  for (auto& sink : sinks) sink->write(step, s);
}

}  // namespace

Trainer::Trainer(TrainerOptions options, BoundOptions task_options, TaskFactory make_task)
    : opt_(std::move(options)), task_options_(std::move(task_options)), make_task_(std::move(make_task)) {}

int64_t Trainer::run() {
  TrainerOptions& opt = opt_;
  if (opt.threads > 0) set_num_threads(opt.threads);
  auto say = [&](const std::string& s) {
    if (opt.quiet) return;
    fmt::print("{}\n", s);
    std::fflush(stdout);  // logs redirected to a file show progress as it happens
  };

  // ---- resume: the checkpoint decides everything that shapes data and updates ----
  std::string ckpt;
  TrainingState state;
  if (!opt.resume.empty()) {
    ckpt = resolve_checkpoint(opt.resume);
    state = TrainingState::read(ckpt);
    const std::string source = (fs::path(ckpt) / "training_state.json").string();
    TrainerOptions::table().restore(opt, state.options, source);
    task_options_.restore(state.options, source);
    say(fmt::format("resuming from {} (step {})", ckpt, state.step));
  }
  TrainerOptions::table().check(opt);
  task_options_.check();
  fs::create_directories(opt.out);
  auto sinks = make_sinks(opt.out, opt.tensorboard);

  // ---- the task (model and data), optimizer, schedule ----
  std::unique_ptr<Task> task = make_task_({ckpt, opt.out, opt.seed, opt.quiet});
  if (!state.task.empty() && state.task != task->name())
    throw std::invalid_argument(fmt::format("[resume] {} is a checkpoint of task '{}', not '{}'", ckpt, state.task, task->name()));
  if (ckpt.empty()) {  // a resumed run has these from its checkpoint
    const size_t per_step = opt.batch * opt.grad_accum;
    if (opt.epochs > 0) opt.steps = int64_t((opt.epochs * task->train_examples_per_epoch() + per_step - 1) / per_step);
    if (opt.steps <= 0) throw std::invalid_argument(fmt::format("[trainer] --steps {} must be positive", opt.steps));
    if (opt.warmup < 0) opt.warmup = opt.steps / 10;
  }
  nn::Module& model = task->model();
  model.train();
  // One block for the weights, one for the gradients: zeroing, clipping and the update are single passes.
  if (!model.arena()) model.flatten_parameters();
  auto optimizer = make_optimizer(opt.optimizer, model, opt.lr, opt.weight_decay);
  optimizer->bind(*model.arena());  // its moments as flat blocks beside the arena: one update pass
  optim::LrSchedule schedule = state.schedule;  // a resumed run follows the schedule it saved
  if (ckpt.empty()) schedule = {optim::LrSchedule::kind_from_name(opt.schedule), opt.lr, opt.warmup, opt.steps, 0.f, 1.f};
  schedule.validate();

  int64_t step = 0;
  if (!ckpt.empty()) {
    optimizer->load_state((fs::path(ckpt) / "optimizer").string());
    step = state.step;
    task->restore_data_state(state.data);
    default_generator().set_state(state.rng);
  } else {
    manual_seed(opt.seed);  // dropout draws from the default generator
  }
  if (step >= opt.steps) {
    say(fmt::format("already at step {} of {}; nothing to do", step, opt.steps));
    return step;
  }
  say(fmt::format("{}; {} steps of {} x {} examples; {} threads", task->describe(), opt.steps, opt.batch, opt.grad_accum,
                  num_threads()));

  // ---- checkpoints: the task's files, then the optimizer and training state, swapped in whole ----
  auto save = [&](int64_t at_step) {
    const std::string dir = (fs::path(opt.out) / checkpoint_name(at_step)).string();
    TrainingState now{at_step, default_generator().state(), schedule, TrainerOptions::table().saved(opt), task->data_state(),
                      task->name()};
    now.options.update(task_options_.saved());  // json keys differ: they come from distinct flags
    task->save(dir, [&](const std::string& tmp) {
      optimizer->save_state((fs::path(tmp) / "optimizer").string());
      now.write(tmp);
    });
    prune_checkpoints(opt.out, opt.keep_checkpoints);
    return dir;
  };

  // ---- the loop ----
  g_interrupted = false;
  auto previous_handler = std::signal(SIGINT, on_sigint);
  Progress progress("step", size_t(opt.steps), "steps");
  const bool tty = ::isatty(::fileno(stderr)) != 0 && !opt.quiet;
  const int64_t first_step = step;
  Window window;
  std::string last_dir;
  while (step < opt.steps) {
    model.zero_grad();
    for (size_t micro = 0; micro < opt.grad_accum; ++micro) {
      const BatchLoss b = task->next_batch_loss(opt.batch);
      mul(b.loss, Tensor::scalar(1.f / float(opt.grad_accum))).backward();
      window.add(b, opt.grad_accum);
    }
    if (opt.clip > 0) optim::clip_grad_norm(*model.arena(), opt.clip);
    const float lr = schedule.at(step);
    optimizer->set_lr(lr);
    optimizer->step();
    ++step;
    ++window.steps;

    const double tps = window.tokens / std::max(window.seconds(), 1e-9);
    const std::string status = fmt::format("{}  lr {:.2e}  {:.0f} tokens/s", window.loss_text(), lr, tps);
    if (tty) progress.update(size_t(step), status);
    if (step % opt.log_every == 0 || step == opt.steps) {
      const double elapsed = progress.elapsed_s();
      const double eta = elapsed / double(step - first_step) * double(opt.steps - step);
      if (!tty)
        say(fmt::format("step {}/{}  {}  elapsed {}  ETA {}", step, opt.steps, status, Progress::format_duration(elapsed),
                        Progress::format_duration(eta)));
      Scalars row = window.scalars(*task);
      row.insert(row.end(), {{"lr", lr}, {"tokens_per_s", tps}, {"elapsed_s", elapsed}});
      write_all(sinks, step, row);
      window = Window();
    }
    if (opt.eval_every > 0 && (step % opt.eval_every == 0 || step == opt.steps)) {
      Evaluation e;
      {
        NoGradGuard no_grad;
        model.eval();
        e = task->evaluate(opt.batch);
        model.train();
      }
      if (!e.metrics.empty()) {
        if (tty) fmt::print(stderr, "\r\033[K");
        say(fmt::format("eval at step {}: {}", step, e.summary));
        Scalars row;
        for (const auto& [name, v] : e.metrics) row.emplace_back("eval_" + name, v);
        write_all(sinks, step, row);
      }
    }
    const bool stop = g_interrupted || (opt.stop_at >= 0 && step >= opt.stop_at);
    if (step == opt.steps || stop || (opt.save_every > 0 && step % opt.save_every == 0)) last_dir = save(step);
    if (stop) {
      if (tty) fmt::print(stderr, "\n");
      say(fmt::format("stopped at step {}; resume with --resume {}", step, last_dir));
      break;
    }
  }
  if (tty && step == opt.steps) progress.finish();
  std::signal(SIGINT, previous_handler);
  if (step == opt.steps) say(fmt::format("done: step {}, checkpoint {}", step, last_dir));
  return step;
}

}  // namespace xg::training
