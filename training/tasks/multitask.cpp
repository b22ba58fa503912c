#include "training/tasks/multitask.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "training/checkpoints.hpp"
#include "training/distributed.hpp"
#include "util/atomic_file.hpp"
#include "util/checksums.hpp"
#include "util/json_input.hpp"

namespace fs = std::filesystem;

namespace xg::training {

const OptionTable<MultiTaskOptions>& MultiTaskOptions::table() {
  using O = MultiTaskOptions;
  constexpr OnResume kRestore = OnResume::Restore;
  static const OptionTable<O> t = OptionTable<O>()
      .add("--multi-task", &O::file, "fine-tune one shared encoder for several tasks listed in this JSON file (a head each; "
                                     "see \"Multi-task fine-tuning\" in docs/finetuning.md): [{\"name\": ..., \"task\": ..., \"train\": "
                                     "..., \"dev\": ..., \"args\": [the kind's flags]}, ...]", OnResume::TaskFile)
      .add("--sampling", &O::sampling, "with --multi-task: which task each batch comes from: proportional (to its training "
                                       "examples), temperature (p ~ n^(1/T)) or round_robin", kRestore)
      .add("--sampling-temperature", &O::temperature, "with --sampling temperature: T (1: proportional; larger: nearer "
                                                      "uniform)", kRestore, between(1e-3, 1e6));
  return t;
}

namespace {

std::invalid_argument bad_file(const std::string& path, const std::string& why) {
  return std::invalid_argument(fmt::format("[multitask] {}: {}", path, why));
}

bool plain_word(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

std::string string_field(const nlohmann::json& task, const char* key, const std::string& path, const std::string& which) {
  if (!task.contains(key)) throw bad_file(path, fmt::format("{} has no \"{}\"", which, key));
  if (!task.at(key).is_string() || task.at(key).get<std::string>().empty())
    throw bad_file(path, fmt::format("{}: \"{}\" must be a non-empty string, got {}", which, key, json_summary(task.at(key))));
  return task.at(key).get<std::string>();
}

}  // namespace

std::vector<MultiTaskEntry> read_multitask_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw bad_file(path, "cannot open the tasks file (--multi-task)");
  nlohmann::json j;
  try {
    j = parse_json_bounded(in);
  } catch (const std::exception& e) {
    throw bad_file(path, fmt::format("not JSON: {}", e.what()));
  }
  if (j.is_object() && j.contains("tasks")) {
    for (const auto& [key, _] : j.items())  // sampling and the rest are flags, not fields here
      if (key != "tasks") throw bad_file(path, fmt::format("unknown key \"{}\" beside \"tasks\" (run-wide settings are flags: --sampling, ...)", key));
    j = j.at("tasks");
  }
  if (!j.is_array()) throw bad_file(path, fmt::format("want a list of tasks (or {{\"tasks\": [...]}}), got {}", json_summary(j)));
  if (j.empty()) throw bad_file(path, "the list of tasks is empty");
  static const std::set<std::string> keys = {"name", "task", "train", "dev", "args"};
  std::vector<MultiTaskEntry> out;
  std::set<std::string> names;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& t = j[i];
    const std::string which = fmt::format("task {}", i + 1);
    if (!t.is_object()) throw bad_file(path, fmt::format("{} is not an object: {}", which, json_summary(t)));
    for (const auto& [key, _] : t.items())
      if (!keys.count(key)) throw bad_file(path, fmt::format("{}: unknown key \"{}\" (use name, task, train, dev, args)", which, key));
    MultiTaskEntry e;
    e.name = string_field(t, "name", path, which);
    const std::string named = fmt::format("task '{}'", e.name);
    if (!plain_word(e.name))
      throw bad_file(path, fmt::format("{}: name '{}' must be letters, digits, _ or - (it names files and metrics)", which, e.name));
    if (!names.insert(e.name).second) throw bad_file(path, fmt::format("two tasks are named '{}'", e.name));
    if (e.name == "mean")  // eval_mean_score is the run's own metric
      throw bad_file(path, fmt::format("{}: the name 'mean' is taken by the run's mean score (eval_mean_score)", which));
    e.task = string_field(t, "task", path, named);
    try {
      finetune_kind(e.task);
    } catch (const std::invalid_argument& err) {
      throw bad_file(path, fmt::format("{}: {}", named, err.what()));
    }
    // Relative to tasks.json's folder, so a resumed run finds them from any working directory.
    const auto beside_file = [&](const std::string& p) {
      return fs::absolute(fs::path(path).parent_path() / fs::path(p)).lexically_normal().string();
    };
    e.train = beside_file(string_field(t, "train", path, named));
    e.dev = beside_file(string_field(t, "dev", path, named));
    if (t.contains("args")) {
      const auto& a = t.at("args");
      if (!a.is_array()) throw bad_file(path, fmt::format("{}: \"args\" must be a list of strings, got {}", named, json_summary(a)));
      for (const auto& arg : a) {
        if (!arg.is_string()) throw bad_file(path, fmt::format("{}: \"args\" holds {}, not a string", named, json_summary(arg)));
        e.args.push_back(arg.get<std::string>());
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<MultiTaskPart> prepare_multitask(const std::string& path, const FinetuneOptions& shared) {
  std::vector<MultiTaskPart> parts;
  for (auto& e : read_multitask_file(path)) {
    MultiTaskPart p;
    p.kind = new_finetune_kind(e.task);
    CLI::App app(e.name);
    p.kind->add_options(app);
    std::vector<std::string> reversed(e.args.rbegin(), e.args.rend());  // CLI11 takes them last first
    try {
      app.parse(reversed);
    } catch (const CLI::ParseError& err) {
      throw bad_file(path, fmt::format("task '{}': args {}: {} (the {} kind's own flags only; shared flags go on the command line)",
                                       e.name, nlohmann::json(e.args).dump(), err.what(), e.task));
    }
    p.options = shared;
    p.options.task = e.task;
    p.options.train = e.train;
    p.options.dev = e.dev;
    p.options.test.clear();
    p.options.predictions.clear();
    p.options.patience = 0;  // the multi-task run stops on the mean score
    p.options.warn_unusual = false;
    p.kind->select(e.task, p.options);
    p.entry = std::move(e);
    parts.push_back(std::move(p));
  }
  return parts;
}

// ---- the model: each task's head model under its name, the shared encoder reachable from each ----

namespace {

class MultiTaskModel : public nn::Module {
 public:
  void add(const std::string& name, nn::Module& m) {
    register_module(name, std::shared_ptr<nn::Module>(std::shared_ptr<void>(), &m));  // not owned: the task owns it
  }
};

}  // namespace

MultiTask::MultiTask(std::vector<MultiTaskPart> parts, const MultiTaskOptions& m, const FinetuneOptions& shared, const TaskContext& ctx)
    : parts_(std::move(parts)), m_(m), shared_(shared), ctx_(ctx) {
  if (parts_.empty()) throw std::invalid_argument("[multitask] no tasks");
  auto model = std::make_unique<MultiTaskModel>();
  std::vector<size_t> sizes;
  for (auto& p : parts_) {
    TaskContext sub = ctx;
    sub.out = (fs::path(ctx.out) / "tasks" / p.entry.name).string();
    if (!ctx.checkpoint.empty()) sub.checkpoint = (fs::path(ctx.checkpoint) / "tasks" / p.entry.name).string();
    std::unique_ptr<Task> made;
    try {
      made = p.kind->make_task(p.options, sub);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("[multitask] {}: task '{}': {}", m_.file, p.entry.name, e.what()));
    }
    auto* f = dynamic_cast<FinetuneTask*>(made.get());
    if (!f) throw std::invalid_argument(fmt::format("[multitask] task '{}': {} is not a fine-tuning task", p.entry.name, p.entry.task));
    made.release();
    tasks_.emplace_back(f);
    if (tasks_.size() > 1) {
      try {
        f->head_model().share_encoder_of(tasks_.front()->head_model());
      } catch (const std::exception& e) {
        throw std::invalid_argument(fmt::format("[multitask] task '{}' cannot share the encoder of task '{}': {}", p.entry.name,
                                                parts_.front().entry.name, e.what()));
      }
    }
    model->add(p.entry.name, f->head_model());
    sizes.push_back(f->train_examples_per_epoch());
  }
  model_ = std::move(model);
  sampler_ = std::make_unique<TaskSampler>(sizes, parse_sampling(m.sampling), m.temperature, ctx.seed);
}

MultiTask::~MultiTask() { model_.reset(); }  // before the tasks whose models it lists

std::string MultiTask::describe() const {
  std::string s = fmt::format("{} tasks sharing one encoder, batches drawn {}", tasks_.size(), sampling_name(parse_sampling(m_.sampling)));
  if (parse_sampling(m_.sampling) == Sampling::Temperature) s += fmt::format(" (T = {:g})", m_.temperature);
  for (size_t i = 0; i < tasks_.size(); ++i)
    s += fmt::format("\n  {} (p = {:.3f}): {}", task_name(i), sampler_->probabilities()[i], tasks_[i]->describe());
  return s;
}

std::vector<optim::ParamGroup> MultiTask::parameter_groups(float weight_decay) {
  // each task's groups (its decay, layer-wise rates) under the model's names; the shared encoder's
  // tensors are stepped once, in the first task's groups and under its names (an optimizer
  // refuses a tensor in two groups)
  std::vector<optim::ParamGroup> all;
  std::set<const TensorImpl*> taken;
  for (size_t i = 0; i < tasks_.size(); ++i)
    for (auto g : tasks_[i]->parameter_groups(weight_decay)) {
      nn::NamedTensors own;
      for (auto& [name, t] : g.params)
        if (taken.insert(t.impl().get()).second) own.emplace_back(task_name(i) + "." + name, t);
      g.params = std::move(own);
      all.push_back(std::move(g));
    }
  return all;
}

size_t MultiTask::train_examples_per_epoch() {
  size_t n = 0;
  for (auto& t : tasks_) n += t->train_examples_per_epoch();
  return n;
}

BatchLoss MultiTask::next_batch_loss(size_t batch_size) {
  const size_t i = sampler_->next();
  BatchLoss b = tasks_[i]->next_batch_loss(batch_size);
  const std::string prefix = task_name(i) + ".";
  Counts counts;
  for (const auto& [name, v] : b.counts) counts[prefix + name] = v;
  counts[prefix + "batches"] = 1;
  counts[prefix + "loss"] = double(b.loss.item());
  b.counts = std::move(counts);
  for (auto& part : b.parts) part.first = task_name(i) + "_" + part.first;
  return b;
}

Scalars MultiTask::train_metrics(const Counts& counts) const {
  Scalars s;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const std::string prefix = task_name(i) + ".";
    Counts own;
    for (auto it = counts.lower_bound(prefix); it != counts.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
      own[it->first.substr(prefix.size())] = it->second;
    if (!own.count("batches")) continue;  // not drawn in this window
    s.emplace_back(task_name(i) + "_loss", own.at("loss") / own.at("batches"));
    s.emplace_back(task_name(i) + "_batches", own.at("batches"));
    own.erase("loss"), own.erase("batches");
    for (const auto& [name, v] : tasks_[i]->train_metrics(own)) s.emplace_back(task_name(i) + "_" + name, v);
  }
  return s;
}

Evaluation MultiTask::evaluate(size_t batch_size) {
  Evaluation e;
  std::string lines;
  double sum = 0;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Evaluation own = tasks_[i]->evaluate(batch_size);  // keeps the task's best in OUT/tasks/<name>/best
    for (const auto& [name, v] : own.metrics) e.metrics.emplace_back(task_name(i) + "_" + name, v);
    // A score that is not finite (a correlation of constant predictions) counts as 0, so one task
    // cannot make the mean -inf and stop OUT/best from ever being written.
    const double score = tasks_[i]->last_dev_score();
    sum += std::isfinite(score) ? score : 0.0;
    lines += fmt::format("\n  {}: {}", task_name(i), own.summary);
  }
  const double mean = sum / double(tasks_.size());
  e.metrics.emplace_back("mean_score", mean);
  e.summary = fmt::format("mean of the tasks' main scores (each out of 1) {:.4f}", mean);
  if (mean > best_) {
    best_ = mean;
    evals_since_best_ = 0;
    save((fs::path(ctx_.out) / "best").string(), [](const std::string&) {});
    e.summary += " (best so far: saved)";
  } else if (shared_.patience > 0 && ++evals_since_best_ >= shared_.patience) {
    e.stop = true;
    e.summary += fmt::format(" (no better mean in {} evaluations: stopping, --patience {})", evals_since_best_, shared_.patience);
  }
  e.summary += lines;
  return e;
}

nlohmann::json MultiTask::data_state() const {
  nlohmann::json tasks = nlohmann::json::object();
  for (size_t i = 0; i < tasks_.size(); ++i) tasks[task_name(i)] = tasks_[i]->data_state();
  nlohmann::json data = nlohmann::json::object();  // what each task reads, so a resume can refuse other data
  nlohmann::json settings = nlohmann::json::object();  // what shapes each task's updates, refused if changed
  for (const auto& p : parts_) {
    data[p.entry.name] = {{"train", data_fingerprint(p.entry.train)}, {"dev", data_fingerprint(p.entry.dev)}};
    settings[p.entry.name] = {{"task", p.entry.task}, {"args", p.entry.args}};
  }
  return {{"sampler", sampler_->state()},
          {"tasks", tasks},
          {"data", data},
          {"settings", settings},
          {"best", std::isfinite(best_) ? nlohmann::json(best_) : nlohmann::json(nullptr)},
          {"evals_since_best", evals_since_best_}};
}

void MultiTask::restore_data_state(const nlohmann::json& s) {
  if (!s.is_object() || !s.contains("sampler") || !s.contains("tasks") || !s.at("tasks").is_object())
    throw std::runtime_error(fmt::format("[multitask] bad data position {}", json_summary(s)));
  for (const auto& item : s.at("tasks").items()) {
    const std::string name = item.key();  // a plain variable: clang 14's lambdas cannot capture bindings
    if (std::none_of(parts_.begin(), parts_.end(), [&](const MultiTaskPart& p) { return p.entry.name == name; }))
      throw std::runtime_error(fmt::format("[multitask] the checkpoint trained a task '{}' that tasks.json no longer has; a "
                                           "resumed run keeps its tasks", name));
  }
  for (size_t i = 0; i < tasks_.size(); ++i)  // checked before anything is restored
    if (s.contains("settings") && s.at("settings").contains(task_name(i))) {  // older checkpoints have none
      const nlohmann::json now = {{"task", parts_[i].entry.task}, {"args", parts_[i].entry.args}};
      const nlohmann::json& saved = s.at("settings").at(task_name(i));
      if (saved != now)  // the flags as written: give them as the run that saved it did
        throw std::runtime_error(fmt::format("[multitask] task '{}': tasks.json now says {}, the checkpoint was trained with {}; "
                                             "a resumed run keeps each task's kind and flags", task_name(i), now.dump(), saved.dump()));
    }
  sampler_->restore(s.at("sampler"));
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (!s.at("tasks").contains(task_name(i)))
      throw std::runtime_error(fmt::format("[multitask] the checkpoint has no data position for task '{}' (tasks.json changed?)",
                                           task_name(i)));
    if (s.contains("data") && s.at("data").contains(task_name(i))) {
      const MultiTaskEntry& e = parts_[i].entry;
      for (const auto& [which, file] : {std::pair{"train", e.train}, {"dev", e.dev}})
        if (s.at("data").at(task_name(i)).value(which, nlohmann::json()) != data_fingerprint(file))
          throw std::runtime_error(fmt::format("[multitask] task '{}': {} {} is not the data the checkpoint was trained on "
                                               "(its size or checksum differs); the data position would be meaningless",
                                               task_name(i), which, file));
    }
    tasks_[i]->restore_data_state(s.at("tasks").at(task_name(i)));
  }
  best_ = s.value("best", nlohmann::json(nullptr)).is_number() ? s.at("best").get<double>() : -std::numeric_limits<double>::infinity();
  evals_since_best_ = s.value("evals_since_best", size_t(0));
  forget_best_elsewhere(ctx_.out, best_, evals_since_best_);
}

void MultiTask::save(const std::string& dir, const std::function<void(const std::string&)>& extra) const {
  // swapped in whole, as save_pretrained does: a crash leaves the old checkpoint or the new one
  write_directory_atomically(dir, "multitask", [&](const std::string& tmp_dir) {
    const fs::path tmp(tmp_dir);
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < tasks_.size(); ++i) {
      tasks_[i]->save((tmp / "tasks" / task_name(i)).string(), [](const std::string&) {});
      list.push_back({{"name", task_name(i)}, {"task", parts_[i].entry.task}, {"architecture", tasks_[i]->head_model().architecture()},
                      {"probability", sampler_->probabilities()[i]}});
    }
    const nlohmann::json about = {{"tasks", list}, {"sampling", m_.sampling}, {"sampling_temperature", m_.temperature}};
    write_text_atomically((tmp / "multitask.json").string(), about.dump(2) + "\n");
    extra(tmp_dir);
  });
}

// ---- the run ----

MultiTaskResult run_multitask(TrainerOptions trainer, FinetuneOptions shared, MultiTaskOptions m) {
  if (Communicator::world().size() > 1)
    throw std::invalid_argument("[multitask] --multi-task runs in one process: start it without mpirun");
  if (m.file.empty() && trainer.resume.empty()) throw std::invalid_argument("[multitask] --multi-task names no tasks file");
  Trainer t(trainer, BoundOptions::join({BoundOptions(FinetuneOptions::table(), shared), BoundOptions(MultiTaskOptions::table(), m)}),
            [&](const TaskContext& ctx) -> std::unique_ptr<Task> {
              parse_sampling(m.sampling);  // a bad name fails before any model is built
              return std::make_unique<MultiTask>(prepare_multitask(m.file, shared), m, shared, ctx);
            });
  MultiTaskResult result{t.run(), nullptr};
  if (result.run.signal != 0 || (trainer.stop_at >= 0 && result.run.step >= trainer.stop_at)) return result;
  const std::string& out = result.run.out;
  const MatmulPrecisionGuard precision(run_precision(trainer));  // scored as evaluated during training
  nlohmann::json scores = nlohmann::json::object();
  for (auto& p : prepare_multitask(m.file, shared)) {
    const fs::path own = fs::path(out) / "tasks" / p.entry.name / "best", in_best = fs::path(out) / "best" / "tasks" / p.entry.name;
    nlohmann::json s = nlohmann::json::object();
    if (fs::exists(own)) s["dev"] = p.kind->score_file(own.string(), p.options.dev, p.options, trainer.batch, "");
    if (fs::exists(in_best)) s["dev_at_best_mean"] = p.kind->score_file(in_best.string(), p.options.dev, p.options, trainer.batch, "");
    scores[p.entry.name] = std::move(s);
  }
  result.scores = std::move(scores);
  return result;
}

}  // namespace xg::training
