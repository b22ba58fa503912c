#include "training/tasks/classification.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>

#include "metrics/eval_metrics.hpp"
#include "models/core/head_config.hpp"
#include "text/classification_data.hpp"
#include "util/json_input.hpp"

namespace fs = std::filesystem;

namespace xg::training {

const OptionTable<ClassificationOptions>& ClassificationOptions::table() {
  using O = ClassificationOptions;
  constexpr OnResume kRestore = OnResume::Restore;
  static const OptionTable<O> t = OptionTable<O>()
      .add("--regression", &O::regression, "one output trained with MSE on numeric labels (STS-B style)", kRestore)
      .add("--label-column", &O::label_column, "label column: a header name or a 1-based number (JSONL: a key)", kRestore)
      .add("--text-column", &O::text_column, "text column: a header name or a 1-based number", kRestore)
      .add("--text-b-column", &O::text_b_column, "second text of pairs (default: the column text_b when the header has one)", kRestore)
      .add("--skip-header", &O::skip_header, "with numbered columns: the first row is a header to skip", kRestore)
      .add("--data-dir", &O::data_dir, "with a GLUE or SuperGLUE --task: the task's folder as the benchmark ships it "
                                       "(its train, dev and test files, unless --train-file, --validation-file or --test-file name others)",
           OnResume::DataPath);
  return t;
}

namespace {

text::TextColumns columns_of(const ClassificationOptions& o) {
  text::TextColumns c;
  c.label = o.label_column;
  c.text = o.text_column;
  c.text_b = o.text_b_column;
  c.skip_header = o.skip_header;
  return c;
}

models::HeadConfig head_config_of(const models::PretrainedModel& m) { return models::HeadConfig::from_json(m.config_json(), m.architecture()); }

// Labelled examples encoded for the model: token ids and the label of each.
struct EncodedSet {
  std::string path;
  std::vector<models::Sequence> sequences;
  std::vector<int64_t> label_ids;  // classification
  std::vector<double> values;      // regression
  size_t size() const { return sequences.size(); }
};

// `rows` (empty: all) of the examples of `path`, encoded.
EncodedSet encode_file(const std::string& path, const ClassificationOptions& c, size_t max_len, const text::Tokenizer& tok,
                       const models::HeadConfig& head, const std::vector<size_t>& rows = {}) {
  auto examples = text::read_text_examples(path, columns_of(c));
  if (!rows.empty()) {
    std::vector<text::TextExample> kept;
    for (size_t r : rows) kept.push_back(std::move(examples[r]));
    examples = std::move(kept);
  }
  EncodedSet set;
  set.path = path;
  if (c.regression) set.values = text::label_values(examples, path);
  else set.label_ids = text::label_ids(examples, head.id2label, path);
  text::EncodeOptions eo;
  eo.max_length = max_len;
  for (const auto& e : examples) {
    const text::Encoding enc = e.pair ? tok.encode_pair(e.text_a, e.text_b, eo) : tok.encode(e.text_a, eo);
    set.sequences.push_back({std::vector<int64_t>(enc.ids.begin(), enc.ids.end()),
                             std::vector<int64_t>(enc.type_ids.begin(), enc.type_ids.end())});
  }
  return set;
}

struct Batch {
  models::ModelInputs inputs;
  Tensor labels;
  size_t tokens = 0;
};

Batch make_batch(const EncodedSet& set, const std::vector<size_t>& rows, int64_t pad_id, bool regression) {
  std::vector<models::Sequence> seqs;
  std::vector<int64_t> ids;
  std::vector<float> values;
  Batch b;
  for (size_t r : rows) {
    seqs.push_back(set.sequences[r]);
    b.tokens += set.sequences[r].ids.size();
    if (regression) values.push_back(float(set.values[r]));
    else ids.push_back(set.label_ids[r]);
  }
  b.inputs = models::pad_sequences(seqs, pad_id);  // to the longest in the batch
  b.labels = regression ? Tensor::from_vector(values, {rows.size()}) : Tensor::from_ints(ids, {rows.size()});
  return b;
}

size_t argmax_row(const float* row, size_t n) { return size_t(std::max_element(row, row + n) - row); }

// A benchmark task's official metrics; their mean (the benchmark's task score) picks the best model.
Scores benchmark_scores(const BenchmarkTask& task, const EncodedSet& set, const std::vector<float>& outputs, size_t num_labels) {
  BenchmarkScores b;
  if (task.regression()) {
    b = score_regression(task, set.values, std::vector<double>(outputs.begin(), outputs.end()));
  } else {
    std::vector<int64_t> predicted;
    for (size_t i = 0; i < set.size(); ++i) predicted.push_back(int64_t(argmax_row(outputs.data() + i * num_labels, num_labels)));
    b = score_benchmark(task, set.label_ids, predicted);
  }
  return {b.values, b.main, b.summary, 1};
}

Scores score_predictions(const EncodedSet& set, const std::vector<float>& outputs, size_t num_labels, bool regression,
                         const BenchmarkTask* benchmark) {
  if (benchmark) return benchmark_scores(*benchmark, set, outputs, num_labels);
  Scores s;
  const double n = double(set.size());
  if (regression) {
    std::vector<double> predicted(outputs.begin(), outputs.end());
    double se = 0;
    for (size_t i = 0; i < predicted.size(); ++i) se += (predicted[i] - set.values[i]) * (predicted[i] - set.values[i]);
    const double p = metrics::pearson(set.values, predicted), r = metrics::spearman(set.values, predicted);
    s.values = {{"pearson", p}, {"spearman", r}, {"mse", se / n}, {"examples", n}};
    s.main = std::isnan(p) ? -std::numeric_limits<double>::infinity() : p;
    s.summary = fmt::format("Pearson {:.4f}, Spearman {:.4f}, MSE {:.4f} on {} examples", p, r, se / n, set.size());
    return s;
  }
  std::vector<int64_t> predicted;
  for (size_t i = 0; i < set.size(); ++i) predicted.push_back(int64_t(argmax_row(outputs.data() + i * num_labels, num_labels)));
  const double acc = metrics::accuracy(set.label_ids, predicted);
  // F1 of label 1 for two classes (GLUE's MRPC/QQP F1), else the macro average; binary F1 is 0
  // when label 1 is absent from both, as sklearn gives
  const bool binary = num_labels == 2;
  const double f1 = binary ? metrics::f1_binary(set.label_ids, predicted, 1) : metrics::f1_macro(set.label_ids, predicted);
  const double mcc = metrics::matthews_corrcoef(set.label_ids, predicted);
  s.values = {{"accuracy", acc}, {binary ? "f1" : "f1_macro", f1}, {"mcc", mcc}, {"examples", n}};
  s.main = acc;
  s.summary = fmt::format("accuracy {:.2f}%, {} {:.4f}, MCC {:.4f} on {} examples", 100 * acc, binary ? "F1" : "macro F1", f1, mcc,
                          set.size());
  return s;
}

// The model's outputs on every example (logits rows, or values), in batches.
std::vector<float> predict_set(models::PretrainedModel& model, const EncodedSet& set, int64_t pad_id, bool regression,
                               size_t batch_size) {
  std::vector<float> outputs;
  for (size_t start = 0; start < set.size(); start += batch_size) {
    std::vector<size_t> rows;
    for (size_t r = start; r < std::min(set.size(), start + batch_size); ++r) rows.push_back(r);
    const Batch b = make_batch(set, rows, pad_id, regression);
    const auto logits = model.forward_named(b.inputs).at("logits").to_vector();
    outputs.insert(outputs.end(), logits.begin(), logits.end());
  }
  return outputs;
}

class ClassificationTask : public FinetuneTask {
 public:
  ClassificationTask(const FinetuneOptions& o, const ClassificationOptions& c, const BenchmarkTask* benchmark, const TaskContext& ctx)
      : FinetuneTask(o, ctx, "classification", "ForSequenceClassification"), c_(c), benchmark_(benchmark) {
    load_model(new_head_json(), [&](const nlohmann::json& config) {
      // A classifier keeps its labels unless they are transformers' placeholders (LABEL_0, ...), as
      // run_glue decides; any other checkpoint gets a new head for the training labels.
      const models::HeadConfig saved = models::HeadConfig::from_json(config, o.model);
      const bool named_labels = saved.id2label != models::HeadConfig::with_num_labels(saved.num_labels()).id2label;
      return named_labels || c_.regression;
    });
    head_ = head_config_of(*model_);
    const bool one_output = head_.num_labels() == 1 && head_.problem_type != "single_label_classification";
    if (c.regression && !one_output)
      throw std::invalid_argument(fmt::format("[classification] {} is a {}-label classifier; --regression needs one output",
                                              model_source(), head_.num_labels()));
    if (!c.regression && one_output)
      throw std::invalid_argument(fmt::format("[classification] {} is a regression model (one output): add --regression", model_source()));
    const size_t all = text::read_text_examples(o.train, columns_of(c)).size();
    train_ = encode_file(o.train, c, o.max_len, *tok_, head_, sample_training(all));
    if (!o.dev.empty()) dev_ = encode_file(o.dev, c, o.max_len, *tok_, head_);
    const models::Sequence* longest = nullptr;
    for (const EncodedSet* set : {&train_, &dev_})
      for (const auto& seq : set->sequences)
        if (!longest || seq.ids.size() > longest->ids.size()) longest = &seq;
    if (longest) check_fits(*longest);
  }

  std::string describe() const override {
    return fmt::format("{} ({:.2f}M parameters), {}; {} training examples, {} dev examples, up to {} tokens",
                       model_->architecture(), double(model_->num_parameters()) / 1e6,
                       c_.regression ? std::string("regression") : fmt::format("{} labels", head_.num_labels()), train_.size(),
                       dev_.size(), opt_.max_len);
  }
  size_t train_examples_per_epoch() override { return train_.size(); }
  size_t train_length(size_t row) const override { return train_.sequences[row].ids.size(); }
  bool splits_batches() const override { return true; }

  BatchLoss next_batch_loss(size_t batch_size) override {
    const std::vector<size_t> rows = next_rows(batch_size, train_.size());
    const Batch b = make_batch(train_, rows, tok_->pad_id(), c_.regression);
    const auto out = model_->forward_named(b.inputs, {{"labels", b.labels}});
    BatchLoss loss{out.at("loss"), {}, {{"examples", double(rows.size())}}, b.tokens};
    if (!c_.regression) {
      const auto logits = out.at("logits").to_vector();
      const auto labels = b.labels.to_ints();
      double correct = 0;
      for (size_t i = 0; i < rows.size(); ++i) correct += int64_t(argmax_row(logits.data() + i * head_.num_labels(), head_.num_labels())) == labels[i];
      loss.counts["correct"] = correct;
    }
    return loss;
  }

  Scalars train_metrics(const Counts& c) const override {
    if (c_.regression || !c.count("examples")) return {};
    return {{"accuracy", c.at("correct") / std::max(c.at("examples"), 1.0)}};
  }

 protected:
  Scores score_dev(size_t batch_size) override {
    if (dev_.size() == 0) return {};
    return score_predictions(dev_, predict_set(*model_, dev_, tok_->pad_id(), c_.regression, batch_size), head_.num_labels(),
                             c_.regression, benchmark_);
  }

 private:
  // The head for this run's labels: one regression output, or the training file's labels.
  nlohmann::json new_head_json() const {
    models::HeadConfig h;
    if (c_.regression) {
      h = models::HeadConfig::with_num_labels(1);
      h.problem_type = "regression";
    } else {
      // a benchmark's labels in the official order, else the training file's, sorted
      const std::vector<std::string> labels =
          benchmark_ ? benchmark_->labels : text::label_list(text::read_text_examples(opt_.train, columns_of(c_)), opt_.train);
      if (labels.size() < 2)  // a one-class model reaches 100% and has learnt nothing
        throw std::invalid_argument(fmt::format("[classification] --train-file {}: every example has the label '{}': a classifier needs "
                                                "two or more labels (--regression for a value to predict)",
                                                opt_.train, labels.empty() ? "" : labels.front()));
      h = models::HeadConfig::with_labels(labels);
      h.problem_type = "single_label_classification";
    }
    nlohmann::json j = nlohmann::json::object();
    h.add_to_json(j);
    return j;
  }

  const ClassificationOptions c_;
  const BenchmarkTask* benchmark_;
  models::HeadConfig head_;
  EncodedSet train_, dev_;
};

// One row per example: the predicted label (its name), or the value for regression.
void write_label_predictions(const std::string& path, const std::vector<float>& outputs, const models::HeadConfig& head, bool regression) {
  std::vector<std::pair<std::string, std::string>> rows;
  const size_t n = head.num_labels();
  for (size_t i = 0; i * (regression ? 1 : n) < outputs.size(); ++i)
    rows.emplace_back(std::to_string(i), regression ? fmt::format("{:.6g}", outputs[i]) : head.id2label[argmax_row(outputs.data() + i * n, n)]);
  write_index_predictions(path, rows);
}

}  // namespace

std::vector<std::string> ClassificationKind::task_names() const {
  std::vector<std::string> names = {"classification"};
  for (const auto& t : benchmark_tasks()) names.push_back(t.name);
  return names;
}

void ClassificationKind::select(const std::string& task_name, FinetuneOptions& o) {
  benchmark_ = find_benchmark_task(task_name);
  if (!benchmark_) {
    if (!options_.data_dir.empty())
      throw std::invalid_argument(fmt::format("[classification] --data-dir {} needs a GLUE or SuperGLUE --task ({})",
                                              options_.data_dir, benchmark_task_names()));
    return;
  }
  options_.label_column = benchmark_->labelled.label;
  options_.text_column = benchmark_->labelled.text;
  options_.text_b_column = benchmark_->labelled.text_b;
  options_.skip_header = benchmark_->labelled.skip_header;
  options_.regression = benchmark_->regression();
  if (options_.data_dir.empty()) return;
  const BenchmarkFiles files = benchmark_files(*benchmark_, options_.data_dir);
  if (o.train.empty()) o.train = files.train;
  if (o.dev.empty()) o.dev = files.dev;
  if (o.test.empty()) o.test = files.test;
}

std::unique_ptr<Task> ClassificationKind::make_task(const FinetuneOptions& o, const TaskContext& ctx) {
  return std::make_unique<ClassificationTask>(o, options_, benchmark_, ctx);
}

nlohmann::json ClassificationKind::score_file(const std::string& checkpoint, const std::string& file, const FinetuneOptions& o,
                                              size_t batch_size, const std::string& predictions) {
  const ScoringModel m(checkpoint, o);
  if (benchmark_ && file == o.test) {  // a benchmark's test file has no labels: predicted for its leaderboard
    const std::string path =
        predictions.empty() ? (fs::path(checkpoint).parent_path() / benchmark_->predictions_file()).string() : predictions;
    write_test_predictions(*benchmark_, *m.model, *m.tok, file, path, o.max_len, batch_size);
    fmt::print("test predictions for the {} leaderboard: {}\n", benchmark_->submission, path);
    return nlohmann::json::object();
  }
  const models::HeadConfig head = head_config_of(*m.model);
  const EncodedSet set = encode_file(file, options_, o.max_len, *m.tok, head);
  const auto outputs = predict_set(*m.model, set, m.tok->pad_id(), options_.regression, batch_size);
  if (!predictions.empty()) write_label_predictions(predictions, outputs, head, options_.regression);
  return score_predictions(set, outputs, head.num_labels(), options_.regression, benchmark_).values_json();
}

}  // namespace xg::training
