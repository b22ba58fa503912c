#pragma once
// What every fine-tuning task shares, so a new kind of task (classification, NER, QA, ...) writes
// only its data, its batch loss and its scoring:
// - FinetuneOptions, the flags common to all kinds (--task, --train, --dev, --model, ...);
// - FinetuneTask, a Task base that owns the head model (from a checkpoint of any registered family,
//   or a [family-]size preset from scratch), the tokenizer, a seeded resumable order over the
//   training examples, layer-wise learning-rate decay and freezing, the best checkpoint (OUT/best)
//   and early stopping;
// - FinetuneKind, one per kind of task, and the registry bert_finetune dispatches --task on.

#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "autograd/engine.hpp"
#include "models/core/pretrained.hpp"
#include "nn/packed_weights.hpp"
#include "text/tokenizer.hpp"
#include "training/task.hpp"
#include "training/trainer.hpp"
#include "util/options.hpp"

namespace xg::training {

struct FinetuneOptions : ResumableOptions {
  std::string task;  // a kind ("classification", ...) or a benchmark that presets one; empty: classification
  std::string train;  // labelled training data
  std::string dev;    // evaluated each epoch (or --eval-every steps); the best model is kept
  std::string test;   // scored (or, unlabelled, predicted) with the best model at the end
  std::string model = "tiny";  // a checkpoint directory of any registered family, or a [family-]size preset
  std::string vocab = "data/bert-base-uncased-vocab.txt";  // for a preset; a checkpoint brings its own
  bool cased = false;
  bool allow_tokenizer_mismatch = false;  // a tokenizer of another family's kind is refused unless set
  size_t max_len = 128;            // tokens per example (or window), special tokens included
  std::string predictions;         // the best model's predictions on --test (else --dev), in the kind's format
  std::string score_precision;     // the final scores' matmul precision: fp32, bf16, int8; empty: as trained
  size_t patience = 0;             // evaluations without a better dev score before stopping; 0: never stop early
  float layer_lr_decay = 1.f;      // each encoder layer learns at this fraction of the rate of the one above it
  size_t freeze_layers = 0;        // the embeddings and this many lowest layers stay fixed
  bool freeze_encoder = false;     // only the head learns
  size_t max_train_examples = 0;   // train on this many examples (a seeded sample); 0: all
  bool group_by_length = false;    // batches of examples of similar length (less padding)
  bool warn_unusual = true;        // print unusual_settings (not a flag: a learning curve warns for its first run)

  static const OptionTable<FinetuneOptions>& table();
};

// The scores of a model on a labelled set. `main` is what the best checkpoint is chosen by (higher
// is better); `values` are logged as eval_NAME and reported.
struct Scores {
  Scalars values;
  double main = -std::numeric_limits<double>::infinity();
  std::string summary;
  double full_scale = 1;  // main's perfect score: 1, or 100 for percentages (SQuAD), so tasks' scores can be averaged

  // The values as one JSON object {name: value}, as score_file returns them.
  nlohmann::json values_json() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, v] : values) j[name] = v;
    return j;
  }
};

// The tokenizer a model directory brings (tokenizer files, or a bare vocab.txt), else --vocab
// (--cased keeps case). `model_dir` may be empty.
std::unique_ptr<text::Tokenizer> finetune_tokenizer(const std::string& model_dir, const FinetuneOptions& o);

// A checkpoint a kind saved, loaded to score a data file (FinetuneKind::score_file): its model
// in eval mode, its tokenizer (finetune_tokenizer's), and gradients off while this lives. At
// matmul precision INT8 its linear layers' weights are quantized (nn::InferenceWeights), as
// bert_infer --precision int8 serves them.
struct ScoringModel {
  ScoringModel(const std::string& checkpoint, const FinetuneOptions& o);
  NoGradGuard no_grad;
  std::unique_ptr<models::PretrainedModel> model;
  std::unique_ptr<text::Tokenizer> tok;
  std::unique_ptr<nn::InferenceWeights> int8_weights;
};

// Writes (index, prediction) rows under the header index<TAB>prediction, atomically: GLUE's
// submission TSV and the --predictions of the kinds that predict one label per example. Throws
// "[predictions] PATH: ..." for a field holding a tab or newline.
void write_index_predictions(const std::string& path, const std::vector<std::pair<std::string, std::string>>& rows);

// The registered architecture of family `model_type` whose name ends with `head_suffix`
// ("ForTokenClassification"); throws naming `source` when the family has none.
std::string head_architecture(const std::string& model_type, const std::string& head_suffix, const std::string& source);

// --group-by-length, after transformers' LengthGroupedSampler: each run of `megabatch` consecutive
// entries of a shuffled `order` is sorted by length, longest first (stably), so a batch cut from
// it holds examples of similar length while the order stays random at the megabatch scale.
void group_by_length(std::vector<size_t>& order, size_t megabatch, const std::function<size_t(size_t)>& length);
// The megabatch for `examples` in batches of `batch` (one rank's): as transformers, at most 50
// batches and at most a quarter of the examples, so an epoch has at least 4 shuffled megabatches.
// It depends on neither the rank count nor the position, so a resumed run rebuilds the same order.
size_t length_group_size(size_t examples, size_t batch);

// The first `limit` of `n` indices in a seeded random order, sorted (all of them when limit is 0
// or >= n): the training subset of --max-train-examples, the same for a seed whatever the kind.
std::vector<size_t> sample_indices(size_t n, size_t limit, uint64_t seed);

// A run resumed into another --out has no OUT/best there: its best score so far (and the
// evaluations since, for --patience) start over, so that its first evaluation saves one.
void forget_best_elsewhere(const std::string& out, double& best, size_t& evals_since_best);

class FinetuneTask : public Task {
 public:
  // `kind` names the task in checkpoints; `head_suffix` picks the family's head class.
  FinetuneTask(const FinetuneOptions& o, const TaskContext& ctx, std::string kind, std::string head_suffix);

  std::string name() const override { return kind_; }
  nn::Module& model() override { return *model_; }
  std::vector<optim::ParamGroup> parameter_groups(float weight_decay) override;
  // Scores the dev set, keeps the best model in OUT/best, and asks the Trainer to stop after
  // --patience evaluations without a better score.
  Evaluation evaluate(size_t batch_size) final;
  nlohmann::json data_state() const override;
  void restore_data_state(const nlohmann::json& state) override;
  void save(const std::string& dir, const std::function<void(const std::string&)>& extra) const override;
  // The examples in --train (before --max-train-examples), and how many of them this run trains on.
  size_t train_pool() const { return train_pool_; }
  size_t train_sampled() const { return train_sampled_; }
  // The main dev score of the latest evaluate() (what OUT/best is chosen by) over its full scale
  // (1 for a perfect score, whatever the kind); -inf before one.
  double last_dev_score() const { return last_score_; }
  models::PretrainedModel& head_model() { return *model_; }

 protected:
  // The model with a head for this run: the checkpoint resumed from; else --model's checkpoint,
  // whose head is kept when `keep_head(config)` says so (a classifier with the run's labels), else
  // replaced by one built from `new_head` (config fields such as id2label); else a fresh preset
  // with `new_head`. Prints, as transformers does, which weights were new and which were dropped.
  // Then applies --freeze-*. Call once, from the derived constructor.
  void load_model(const nlohmann::json& new_head, const std::function<bool(const nlohmann::json& config)>& keep_head);
  // Fails now, naming the limit, when the model cannot take `longest` (more tokens than positions):
  // a forward pass in eval mode of the longest example's inputs.
  void check_fits(const models::ModelInputs& longest);
  void check_fits(const models::Sequence& longest) { check_fits(models::pad_sequences({longest}, tok_->pad_id())); }
  // The next `batch_size` indices into the training examples, in a seeded order reshuffled each
  // epoch (a resumed run draws the same batches); under data parallelism this rank's share of
  // the next ranks x batch_size.
  std::vector<size_t> next_rows(size_t batch_size, size_t train_size);
  // The tokens of training example `row` (an index next_rows draws), for --group-by-length; a kind
  // whose examples all have one length need not say (0).
  virtual size_t train_length(size_t row) const { (void)row; return 0; }
  // Scores the current model on the dev set (gradients are off and the model in eval mode).
  virtual Scores score_dev(size_t batch_size) = 0;
  // The training examples (of `all` in --train) this run trains on: --max-train-examples of them,
  // a sample drawn with the seed (sample_indices), else all.
  std::vector<size_t> sample_training(size_t all);

  bool resuming() const { return !ctx_.checkpoint.empty(); }
  // Where the model comes from, for messages: the checkpoint resumed from, or --model.
  std::string model_source() const { return resuming() ? ctx_.checkpoint : opt_.model; }

  const FinetuneOptions opt_;
  const TaskContext ctx_;
  std::unique_ptr<text::Tokenizer> tok_;
  std::unique_ptr<models::PretrainedModel> model_;

 private:
  void apply_freezing();

  std::string kind_, head_suffix_;
  bool model_is_checkpoint_ = false;  // --model names a checkpoint directory, not a preset (a new run)
  uint64_t epoch_ = 0, order_epoch_ = std::numeric_limits<uint64_t>::max();
  size_t index_ = 0;
  std::vector<size_t> order_;
  double best_ = -std::numeric_limits<double>::infinity();
  double last_score_ = -std::numeric_limits<double>::infinity();
  size_t evals_since_best_ = 0;
  size_t train_pool_ = 0, train_sampled_ = 0;
};

// One kind of fine-tuning task, as bert_finetune --task names it.
class FinetuneKind {
 public:
  virtual ~FinetuneKind() = default;
  // The --task names this kind accepts (the first is its own name, saved in checkpoints).
  virtual std::vector<std::string> task_names() const = 0;
  // The bert_infer subcommand that runs this kind's fine-tuned model ("classify"), "" for none.
  virtual std::string inference_command() const { return ""; }
  // Adds the kind's own flags to `app` (in a group of their own).
  virtual void add_options(CLI::App& app) = 0;
  // The kind's own options, saved with each checkpoint and restored on --resume.
  virtual BoundOptions options() = 0;
  // Called once, before training, with the --task name given: a benchmark name may preset the
  // kind's columns, labels and metric, and the data files in `o`.
  virtual void select(const std::string& task_name, FinetuneOptions& o) { (void)task_name, (void)o; }
  virtual std::unique_ptr<Task> make_task(const FinetuneOptions& o, const TaskContext& ctx) = 0;
  // Scores a checkpoint this kind saved on a data file, as evaluation does, and writes its
  // predictions to `predictions` unless empty. Returns the scores by name (empty for unlabelled
  // data, which is only predicted).
  virtual nlohmann::json score_file(const std::string& checkpoint, const std::string& file, const FinetuneOptions& o,
                                    size_t batch_size, const std::string& predictions) = 0;
};

// A new instance of every kind, in --help order (training/tasks/finetune_kinds.cpp lists them).
std::vector<std::unique_ptr<FinetuneKind>> make_finetune_kinds();
// Every kind, built once (make_finetune_kinds).
const std::vector<std::unique_ptr<FinetuneKind>>& finetune_kinds();
// A kind of its own (options unset) for `task`, as finetune_kind finds it: several tasks of one
// kind with different options (multi-task fine-tuning) each take one.
std::unique_ptr<FinetuneKind> new_finetune_kind(const std::string& task);
// The kind that accepts `task` (empty: classification); throws listing the names there are.
FinetuneKind& finetune_kind(const std::string& task);

struct FinetuneResult {
  RunResult run;
  size_t train_pool = 0;      // the examples in --train
  size_t train_examples = 0;  // those trained on (--max-train-examples of them, or all)
  // The best model's scores when the run finished: {"dev": {...}, "test": {...}} (test absent
  // without --test); null when it stopped early (a signal or --stop-at), to be resumed.
  nlohmann::json scores;
};

// The --task of a run: as given, else (resuming) the one saved with the checkpoint.
std::string task_of_run(const FinetuneOptions& task, const TrainerOptions& trainer);

// Fine-tunes per `trainer` and `task` with `kind`, evaluating on --dev (each epoch unless
// --eval-every is given), then scores OUT/best on --dev and --test and writes --predictions.
// Prints (rank 0, not when resuming) the unusual_settings of a new run once its training set is read.
FinetuneResult run_finetuning(TrainerOptions trainer, FinetuneOptions task, FinetuneKind& kind);

// The settings of a run that lie outside fine-tuning's usual ranges (BERT paper, appendix A.3: lr
// 1e-5..5e-5, batch 16..128, 2..10 epochs) where that matters, one warning line each: the lr and
// the effective batch (batch x grad-accum x ranks) only when fine-tuning a checkpoint (a preset
// trained from scratch takes other rates); more than 10 epochs without --patience; fewer than 2
// epochs (counting --min-steps) of a small set (under 10k examples).
std::vector<std::string> unusual_settings(const TrainerOptions& trainer, const FinetuneOptions& task, size_t ranks,
                                          size_t train_examples);

}  // namespace xg::training
