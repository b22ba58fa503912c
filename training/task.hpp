#pragma once
// A Task is what the Trainer trains: it owns its model, its data (training batches in a
// resumable order and a held-out set), the loss of a batch and its metrics. The Trainer owns the
// loop, the optimizer, the schedule, checkpoints and logging, and knows nothing of what a task
// predicts. Pre-training (MLM with NSP, SOP or alone: training/tasks/pretraining.hpp) is one task;
// classification, NER and QA are further ones, each a new Task with no change to the Trainer.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.hpp"
#include "optim/optimizer.hpp"
#include "training/metric_sinks.hpp"

namespace xg::training {

// The optimizer settings of a task's recipe (RoBERTa's Adam: beta2 0.98, eps 1e-6; ALBERT: LAMB);
// unset: AdamW and the optimizer's own defaults. --optimizer, --beta2 and --eps override them.
struct OptimizerDefaults {
  std::optional<std::string> optimizer;
  std::optional<float> beta2, eps;
};

// Counts a task sums over batches to compute its metrics (e.g. "masked", "mlm_correct").
using Counts = std::map<std::string, double>;

// One mean the loss adds up, and how many items it is a mean over (masked tokens, sequences).
struct LossTerm {
  std::string name;  // as in BatchLoss::parts when it is logged
  Tensor mean;
  double count = 0;
};

// The loss of one training batch.
struct BatchLoss {
  Tensor loss;            // the scalar the Trainer differentiates
  Scalars parts;          // named parts of the loss as plain values ("mlm", "nsp"), for logging
  Counts counts;          // summed by the Trainer over a logging window, see Task::train_metrics
  size_t tokens = 0;      // real (non-padding) tokens in the batch, for tokens/s
  // `loss` as the sum of its means (mlm over masked tokens + nsp over sequences), for data
  // parallelism: each rank weighs each term by its share of the global count, so the ranks' losses
  // add up to one big batch's. Empty: `loss` is one mean over the batch's examples.
  std::vector<LossTerm> terms = {};
};

struct Evaluation {
  Scalars metrics;        // logged with an "eval_" prefix; empty: nothing to evaluate on
  std::string summary;    // one line for people
  bool stop = false;      // end the run now, with a checkpoint (early stopping)
};

// What the Trainer tells a task when it builds it.
struct TaskContext {
  std::string checkpoint;  // not empty when resuming: take the model (and vocabulary) from it
  std::string out;         // the run's output directory (for files a task makes, e.g. a vocabulary)
  uint64_t seed = 0;       // weights, data order and masks
  bool quiet = false;
  size_t batch = 0;        // examples per micro-batch of each rank, as the run trains (restored on resume)
};

class Task {
 public:
  virtual ~Task() = default;
  // Saved with each checkpoint; a checkpoint of another task is refused on resume.
  virtual std::string name() const = 0;
  // One line about the model and data for the start of a run.
  virtual std::string describe() const = 0;
  virtual nn::Module& model() = 0;
  virtual OptimizerDefaults optimizer_defaults() const { return {}; }
  // The parameters the optimizer updates, grouped by weight decay and rate (lr_scale); frozen
  // ones (requires_grad off) get no gradient, so the optimizer does not step them. Default: BERT's grouping, no decay on
  // biases and LayerNorm weights, every group at the full rate.
  virtual std::vector<optim::ParamGroup> parameter_groups(float weight_decay) {
    return optim::bert_param_groups(model().named_parameters(), weight_decay);
  }
  // Training examples in one pass over the data (--epochs derives the steps from it).
  virtual size_t train_examples_per_epoch() = 0;

  // Draws the next `batch_size` training examples (advancing the data position) and returns
  // their loss with the autograd graph recorded.
  virtual BatchLoss next_batch_loss(size_t batch_size) = 0;

  // Data parallelism: after this call next_batch_loss(b) draws the next `ranks` x b examples of
  // the data order (the position advances past all of them, on every rank) and keeps the
  // `rank`-th b of them, masked as one rank drawing them all would mask them. A task that
  // supports it says so; the Trainer refuses to spread the others over ranks.
  virtual bool splits_batches() const { return false; }
  virtual void set_data_shard(size_t rank, size_t ranks) { shard_ = {rank, ranks}; }
  // Metrics from counts summed over several batches (e.g. accuracies).
  virtual Scalars train_metrics(const Counts& counts) const = 0;
  // Metrics on the held-out data; the Trainer has turned gradients off and the model to eval().
  virtual Evaluation evaluate(size_t batch_size) = 0;

  // The data position, saved with a checkpoint so a resumed run draws the same batches next.
  virtual nlohmann::json data_state() const = 0;
  virtual void restore_data_state(const nlohmann::json& state) = 0;

  // Writes the model (and what it needs, e.g. the vocabulary) as a checkpoint directory `dir`,
  // atomically; `extra(tmp_dir)`, called after the task's own files are written, adds the
  // Trainer's files (and the checksums of all) before the directory is swapped in.
  virtual void save(const std::string& dir, const std::function<void(const std::string& tmp_dir)>& extra) const = 0;

 protected:
  // This rank's part of each global batch (set_data_shard).
  struct DataShard {
    size_t rank = 0, ranks = 1;
    size_t draw(size_t batch) const { return batch * ranks; }  // examples to draw for a batch of `batch` per rank
    template <class T>
    std::vector<T> keep(std::vector<T> drawn) const {  // this rank's slice of what draw() said to draw
      if (ranks == 1) return drawn;
      const size_t b = drawn.size() / ranks;
      return std::vector<T>(std::make_move_iterator(drawn.begin() + long(rank * b)),
                            std::make_move_iterator(drawn.begin() + long((rank + 1) * b)));
    }
  };
  DataShard shard_;
};

using TaskFactory = std::function<std::unique_ptr<Task>(const TaskContext&)>;

}  // namespace xg::training
