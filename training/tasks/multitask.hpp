#pragma once
// Multi-task fine-tuning (bert_finetune --multi-task tasks.json): one encoder shared by several
// fine-tuning tasks of any kinds (classification or regression, NER, QA, multiple choice), each
// with a head of its own. Each training batch comes from one task, drawn by a TaskSampler
// (proportional, temperature or round-robin); each evaluation scores every task on its dev set.
//
// tasks.json is a list of tasks (or {"tasks": [...]}), each
//   {"name": "sentiment", "task": "classification", "train": "a.tsv", "dev": "b.tsv", "args": ["--text-column", "2"]}
// "task" is a --task name (a kind or a benchmark), "args" that kind's own flags as its --help
// lists them. The flags of bert_finetune's "Task, data and model" group (--model, --max-len, ...)
// and the training flags are shared by all tasks. One epoch is the sum of the tasks' training
// examples (batches of the one task drawn each time).
//
// Output: OUT/tasks/<name>/best/, each task's model (the shared encoder and its head) at its best
// dev score, a standalone Hugging Face checkpoint of that kind (bert_finetune --model, bert_infer,
// transformers); OUT/best/, the multi-task model at the best mean of the tasks' main scores, with
// the same per-task directories under OUT/best/tasks/; each checkpoint-N/ likewise.
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "training/tasks/finetuning.hpp"
#include "training/tasks/task_sampler.hpp"

namespace xg::training {

// One task as tasks.json lists it.
struct MultiTaskEntry {
  std::string name;  // names its metrics (eval_<name>_<metric>), its directory, its parameters
  std::string task;  // as --task: a kind or a benchmark
  std::string train, dev;
  std::vector<std::string> args;  // the kind's own flags
};

// Reads tasks.json; throws naming the file and the value for a missing file, an empty list, an
// unknown task, a name used twice or not a plain word, a missing "train" or "dev", or an unknown key.
std::vector<MultiTaskEntry> read_multitask_file(const std::string& path);

struct MultiTaskOptions : ResumableOptions {
  std::string file;  // --multi-task: tasks.json
  std::string sampling = "proportional";
  float temperature = 2;  // --sampling-temperature, for --sampling temperature

  static const OptionTable<MultiTaskOptions>& table();
};

// A task of the run: its entry, a kind of its own with the entry's args parsed, and its options
// (the shared ones with its data).
struct MultiTaskPart {
  MultiTaskEntry entry;
  std::unique_ptr<FinetuneKind> kind;
  FinetuneOptions options;
};

// The tasks of `path` ready to build: throws as read_multitask_file does, and for args the
// kind refuses (naming the file, the task and the flag).
std::vector<MultiTaskPart> prepare_multitask(const std::string& path, const FinetuneOptions& shared);

// The Task the Trainer trains: every part's task, their head models sharing the first one's
// embeddings and encoder layers.
class MultiTask : public Task {
 public:
  MultiTask(std::vector<MultiTaskPart> parts, const MultiTaskOptions& m, const FinetuneOptions& shared, const TaskContext& ctx);
  ~MultiTask() override;

  std::string name() const override { return "multitask"; }
  std::string describe() const override;
  nn::Module& model() override { return *model_; }
  std::vector<optim::ParamGroup> parameter_groups(float weight_decay) override;
  size_t train_examples_per_epoch() override;
  // A batch of the task the sampler draws: its loss, its counts and parts under "<name>.".
  BatchLoss next_batch_loss(size_t batch_size) override;
  // Per task: "<name>_loss" (its batches' mean loss), "<name>_batches", and its own metrics as "<name>_<metric>".
  Scalars train_metrics(const Counts& counts) const override;
  // Every task's dev scores as "<name>_<metric>" (each task keeping its best in OUT/tasks/<name>/best)
  // and "mean_score", the mean of their main scores (each over its full scale: SQuAD's F1 / 100),
  // which picks OUT/best and drives --patience.
  Evaluation evaluate(size_t batch_size) override;
  nlohmann::json data_state() const override;
  void restore_data_state(const nlohmann::json& state) override;
  // DIR/tasks/<name>/ per task (a standalone checkpoint) and DIR/multitask.json, then `extra`.
  void save(const std::string& dir, const std::function<void(const std::string&)>& extra) const override;

  size_t size() const { return tasks_.size(); }
  FinetuneTask& task(size_t i) { return *tasks_.at(i); }
  const std::string& task_name(size_t i) const { return parts_.at(i).entry.name; }
  const TaskSampler& sampler() const { return *sampler_; }

 private:
  std::vector<MultiTaskPart> parts_;
  std::vector<std::unique_ptr<FinetuneTask>> tasks_;
  std::unique_ptr<nn::Module> model_;  // each task's head model under its name (after tasks_: it does not own them)
  MultiTaskOptions m_;
  FinetuneOptions shared_;
  TaskContext ctx_;
  std::unique_ptr<TaskSampler> sampler_;  // once the tasks' sizes are known
  double best_ = -std::numeric_limits<double>::infinity();
  size_t evals_since_best_ = 0;
};

struct MultiTaskResult {
  RunResult run;
  // Per task, the dev scores of its exported model OUT/tasks/<name>/best ("dev") and of the task
  // in OUT/best ("dev_at_best_mean"); null when the run stopped early to be resumed.
  nlohmann::json scores;
};

// Trains the tasks of m.file per `trainer` (one process: refused under mpirun), then scores each
// task's exported checkpoints on its dev set.
MultiTaskResult run_multitask(TrainerOptions trainer, FinetuneOptions shared, MultiTaskOptions m);

}  // namespace xg::training
