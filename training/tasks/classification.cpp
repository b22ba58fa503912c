#include "training/tasks/classification.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>

#include "models/checkpoint.hpp"
#include "text/load_tokenizer.hpp"
#include "training/eval_metrics.hpp"
#include "training/tasks/benchmark_tasks.hpp"
#include "training/tasks/pretraining.hpp"
#include "util/json_input.hpp"

namespace fs = std::filesystem;

namespace xg::training {

const OptionTable<ClassificationOptions>& ClassificationOptions::table() {
  using O = ClassificationOptions;
  constexpr OnResume kRestore = OnResume::Restore;
  static const OptionTable<O> t = OptionTable<O>()
      .add("--train", &O::train, "labelled training text: .tsv (a header row label<TAB>text [<TAB>text_b] needs no column "
                                 "flags), .csv or .jsonl", kRestore)
      .add("--dev", &O::dev, "labelled text evaluated each epoch; the best model is kept in OUT/best", kRestore)
      .add("--test", &O::test, "labelled text scored with the best model at the end", kRestore)
      .add("--model", &O::model, "checkpoint directory of any registered family (its encoder is fine-tuned, the classifier "
                                 "is new unless it already is one), or a [family-]size preset (tiny, roberta-small, albert-base, ...) from scratch", kRestore)
      .add("--vocab", &O::vocab, "WordPiece vocab.txt or tokenizer directory for a preset (a checkpoint brings its own)", kRestore)
      .add("--cased", &O::cased, "keep case and accents with --vocab (default: uncased)", kRestore)
      .add("--max-len", &O::max_len, "tokens per example, special tokens included (longer texts are truncated)", kRestore, at_least(4))
      .add("--regression", &O::regression, "one output trained with MSE on numeric labels (STS-B style)", kRestore)
      .add("--label-column", &O::label_column, "label column: a header name or a 1-based number (JSONL: a key)", kRestore)
      .add("--text-column", &O::text_column, "text column: a header name or a 1-based number", kRestore)
      .add("--text-b-column", &O::text_b_column, "second text of pairs (default: the column text_b when the header has one)", kRestore)
      .add("--skip-header", &O::skip_header, "with numbered columns: the first row is a header to skip", kRestore)
      .add("--task", &O::task, "a GLUE or SuperGLUE task (" + benchmark_task_names() + "): its columns, labels in the official "
                               "order and official metrics; --test is its unlabelled test file, predicted for the leaderboard", kRestore)
      .add("--data-dir", &O::data_dir, "with --task: the task's folder as the benchmark ships it (train, dev and test files)", kRestore)
      .add("--predictions", &O::predictions, "with --task and a test file: where the leaderboard's predictions go (default "
                                             "OUT/<its file name>: CoLA.tsv, BoolQ.jsonl, ...)", kRestore);
  return t;
}

namespace {

// The tokenizer a model directory brings (tokenizer files, or a bare vocab.txt), else --vocab.
std::unique_ptr<text::Tokenizer> tokenizer_for(const std::string& model_dir, const ClassificationOptions& o) {
  text::TokenizerOptions topt;
  topt.lowercase = !o.cased;
  if (!model_dir.empty()) {
    if (fs::exists(fs::path(model_dir) / "tokenizer_config.json")) return text::load_tokenizer(model_dir);
    if (fs::exists(fs::path(model_dir) / "vocab.txt")) return text::open_tokenizer((fs::path(model_dir) / "vocab.txt").string(), topt);
  }
  return text::open_tokenizer(o.vocab, topt);
}

text::TextColumns columns_of(const ClassificationOptions& o) {
  text::TextColumns c;
  c.label = o.label_column;
  c.text = o.text_column;
  c.text_b = o.text_b_column;
  c.skip_header = o.skip_header;
  return c;
}

models::HeadConfig head_config_of(const models::PretrainedModel& m) { return models::HeadConfig::from_json(m.config_json(), m.architecture()); }

// The family's sequence-classification class: the registered architecture named *ForSequenceClassification.
std::string classifier_architecture(const std::string& model_type, const std::string& source) {
  for (const auto& a : models::registered_architectures(model_type))
    if (a.size() > 25 && a.compare(a.size() - 25, 25, "ForSequenceClassification") == 0) return a;
  throw std::invalid_argument(fmt::format("[classification] {}: the {} family has no sequence-classification head", source, model_type));
}

// Labelled examples encoded for the model: token ids and the label of each.
struct EncodedSet {
  std::string path;
  std::vector<models::Sequence> sequences;
  std::vector<int64_t> label_ids;  // classification
  std::vector<double> values;      // regression
  size_t size() const { return sequences.size(); }
};

EncodedSet encode_file(const std::string& path, const ClassificationOptions& o, const text::Tokenizer& tok,
                       const models::HeadConfig& head) {
  const auto examples = text::read_text_examples(path, columns_of(o));
  EncodedSet set;
  set.path = path;
  if (o.regression) set.values = text::label_values(examples, path);
  else set.label_ids = text::label_ids(examples, head.id2label, path);
  text::EncodeOptions eo;
  eo.max_length = o.max_len;
  for (const auto& e : examples) {
    const text::Encoding enc = e.text_b.empty() ? tok.encode(e.text_a, eo) : tok.encode_pair(e.text_a, e.text_b, eo);
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

// A benchmark task's official metrics; its main score picks the best model.
Scores benchmark_scores(const BenchmarkTask& task, const EncodedSet& set, const std::vector<float>& outputs, size_t num_labels) {
  BenchmarkScores b;
  if (task.regression()) {
    b = score_regression(task, set.values, std::vector<double>(outputs.begin(), outputs.end()));
  } else {
    std::vector<int64_t> predicted;
    for (size_t i = 0; i < set.size(); ++i) predicted.push_back(int64_t(argmax_row(outputs.data() + i * num_labels, num_labels)));
    b = score_benchmark(task, set.label_ids, predicted);
  }
  return {b.values, b.main, b.summary};
}

Scores score_predictions(const EncodedSet& set, const std::vector<float>& outputs, size_t num_labels, bool regression,
                         const std::string& benchmark = "") {
  if (const BenchmarkTask* task = find_benchmark_task(benchmark)) return benchmark_scores(*task, set, outputs, num_labels);
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

// The model's outputs on every example (gradients off, eval mode): logits rows, or values.
Scores score_set(models::PretrainedModel& model, const EncodedSet& set, int64_t pad_id, bool regression, size_t batch_size,
                 const std::string& benchmark) {
  const size_t num_labels = head_config_of(model).num_labels();
  std::vector<float> outputs;
  for (size_t start = 0; start < set.size(); start += batch_size) {
    std::vector<size_t> rows;
    for (size_t r = start; r < std::min(set.size(), start + batch_size); ++r) rows.push_back(r);
    const Batch b = make_batch(set, rows, pad_id, regression);
    const auto logits = model.forward_named(b.inputs).at("logits").to_vector();
    outputs.insert(outputs.end(), logits.begin(), logits.end());
  }
  return score_predictions(set, outputs, num_labels, regression, benchmark);
}

class ClassificationTask : public Task {
 public:
  ClassificationTask(const ClassificationOptions& o, const TaskContext& ctx) : opt_(o), ctx_(ctx) {
    if (o.train.empty()) throw std::invalid_argument("[classification] --train is required");
    const bool resume = !ctx.checkpoint.empty();
    const bool from_dir = !resume && fs::is_directory(o.model);
    tok_ = tokenizer_for(resume ? ctx.checkpoint : from_dir ? o.model : "", o);
    model_ = make_model(from_dir);
    head_ = head_config_of(*model_);
    const std::string source = resume ? ctx.checkpoint : o.model;
    const bool one_output = head_.num_labels() == 1 && head_.problem_type != "single_label_classification";
    if (o.regression && !one_output)
      throw std::invalid_argument(fmt::format("[classification] {} is a {}-label classifier; --regression needs one output",
                                              source, head_.num_labels()));
    if (!o.regression && one_output)
      throw std::invalid_argument(fmt::format("[classification] {} is a regression model (one output): add --regression", source));
    train_ = encode_file(o.train, o, *tok_, head_);
    if (!o.dev.empty()) dev_ = encode_file(o.dev, o, *tok_, head_);
    check_longest_fits();
  }

  std::string name() const override { return "classification"; }
  std::string describe() const override {
    return fmt::format("{} ({:.2f}M parameters), {}; {} training examples, {} dev examples, up to {} tokens",
                       model_->architecture(), double(model_->num_parameters()) / 1e6,
                       opt_.regression ? std::string("regression") : fmt::format("{} labels", head_.num_labels()), train_.size(),
                       dev_.size(), opt_.max_len);
  }
  nn::Module& model() override { return *model_; }
  size_t train_examples_per_epoch() override { return train_.size(); }

  BatchLoss next_batch_loss(size_t batch_size) override {
    std::vector<size_t> rows;
    while (rows.size() < batch_size) {
      if (order_epoch_ != epoch_ || order_.empty()) shuffle_for(epoch_);
      rows.push_back(order_[index_]);
      if (++index_ == order_.size()) index_ = 0, ++epoch_;
    }
    const Batch b = make_batch(train_, rows, tok_->pad_id(), opt_.regression);
    const auto out = model_->forward_named(b.inputs, {{"labels", b.labels}});
    BatchLoss loss{out.at("loss"), {}, {{"examples", double(rows.size())}}, b.tokens};
    if (!opt_.regression) {
      const auto logits = out.at("logits").to_vector();
      const auto labels = b.labels.to_ints();
      double correct = 0;
      for (size_t i = 0; i < rows.size(); ++i) correct += int64_t(argmax_row(logits.data() + i * head_.num_labels(), head_.num_labels())) == labels[i];
      loss.counts["correct"] = correct;
    }
    return loss;
  }

  Scalars train_metrics(const Counts& c) const override {
    if (opt_.regression || !c.count("examples")) return {};
    return {{"accuracy", c.at("correct") / std::max(c.at("examples"), 1.0)}};
  }

  Evaluation evaluate(size_t batch_size) override {
    if (dev_.size() == 0) return {};
    const Scores s = score_set(*model_, dev_, tok_->pad_id(), opt_.regression, batch_size, opt_.task);
    Evaluation e{s.values, s.summary};
    if (s.main > best_) {  // kept whole, as any checkpoint: a crash mid-save leaves the old best
      best_ = s.main;
      save((fs::path(ctx_.out) / "best").string(), [](const std::string&) {});
      e.summary += " (best so far: saved)";
    }
    return e;
  }

  nlohmann::json data_state() const override { return {{"epoch", epoch_}, {"index", index_}, {"best", best_}}; }
  void restore_data_state(const nlohmann::json& s) override {
    try {
      epoch_ = s.at("epoch").get<uint64_t>();
      index_ = s.at("index").get<size_t>();
      best_ = s.at("best").is_number() ? s.at("best").get<double>() : -std::numeric_limits<double>::infinity();
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("[classification] bad data position {}: {}", json_summary(s), e.what()));
    }
    if (index_ >= train_.size()) throw std::runtime_error(fmt::format("[classification] data position {} is beyond the {} training examples", index_, train_.size()));
  }

  void save(const std::string& dir, const std::function<void(const std::string&)>& extra) const override {
    models::save_pretrained(*model_, dir, [&](const std::string& tmp) {
      tok_->save_pretrained(tmp);
      extra(tmp);
    });
  }

 private:
  std::unique_ptr<models::PretrainedModel> make_model(bool from_dir) {
    if (!ctx_.checkpoint.empty()) return std::move(models::load_pretrained(ctx_.checkpoint).model);
    if (from_dir) {
      const std::string config_path = (fs::path(opt_.model) / "config.json").string();
      const nlohmann::json config = models::config::read_json_file(config_path, "classification");
      const std::string type = config.value("model_type", "");
      const std::string arch = classifier_architecture(type, config_path);
      const bool is_classifier = config.contains("architectures") && config["architectures"].is_array() &&
                                 !config["architectures"].empty() && config["architectures"][0] == arch;
      // A classifier keeps its labels unless they are transformers' placeholders (LABEL_0, ...), as
      // run_glue decides; any other checkpoint gets a new head for the training labels.
      const models::HeadConfig saved = models::HeadConfig::from_json(config, config_path);
      const bool named_labels = saved.id2label != models::HeadConfig::with_num_labels(saved.num_labels()).id2label;
      const bool keep = is_classifier && (named_labels || opt_.regression);
      auto loaded = models::load_pretrained(opt_.model, ctx_.seed, arch, keep ? nlohmann::json::object() : new_head_json());
      if (!ctx_.quiet) {  // as transformers reports them
        if (!loaded.newly_initialised.empty())
          fmt::print("newly initialised in {} (not in {}): {}\n", arch, opt_.model, fmt::join(loaded.newly_initialised, ", "));
        if (!loaded.dropped.empty())
          fmt::print("not used by {} (dropped from {}): {}\n", arch, opt_.model, fmt::join(loaded.dropped, ", "));
      }
      return std::move(loaded.model);
    }
    nlohmann::json j = fresh_model_config(opt_.model, tok_->vocab_size(), tok_->pad_id(), tok_->cls_id(), tok_->sep_id(), opt_.max_len);
    j.update(new_head_json());
    const std::string type = j.at("model_type").get<std::string>();
    auto model = models::build_model(j, "--model " + opt_.model, classifier_architecture(type, "--model " + opt_.model));
    Generator gen(ctx_.seed);
    model->init_weights(gen);
    return model;
  }

  // A model with fewer positions than the longest example fails here, naming both, not mid-run.
  void check_longest_fits() {
    const models::Sequence* longest = nullptr;
    for (const EncodedSet* set : {&train_, &dev_})
      for (const auto& seq : set->sequences)
        if (!longest || seq.ids.size() > longest->ids.size()) longest = &seq;
    if (!longest) return;
    NoGradGuard no_grad;
    model_->eval();
    model_->forward_named(models::pad_sequences({*longest}, tok_->pad_id()));
    model_->train();
  }

  // The head for this run's labels: one regression output, or the training file's labels.
  nlohmann::json new_head_json() const {
    models::HeadConfig h;
    if (opt_.regression) {
      h = models::HeadConfig::with_num_labels(1);
      h.problem_type = "regression";
    } else {
      const BenchmarkTask* benchmark = find_benchmark_task(opt_.task);  // the official order, else sorted
      h = models::HeadConfig::with_labels(benchmark ? benchmark->labels : text::label_list(text::read_text_examples(opt_.train, columns_of(opt_))));
      h.problem_type = "single_label_classification";
    }
    nlohmann::json j = nlohmann::json::object();
    h.add_to_json(j);
    j.erase("classifier_dropout");  // the checkpoint's own, if it has one
    return j;
  }

  // A fixed permutation per epoch from the seed: a resumed run draws the same batches.
  void shuffle_for(uint64_t epoch) {
    order_.resize(train_.size());
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    std::mt19937_64 rng(ctx_.seed * 0x9E3779B97F4A7C15ULL + epoch);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[size_t(rng() % i)]);
    order_epoch_ = epoch;
  }

  const ClassificationOptions opt_;
  const TaskContext ctx_;
  std::unique_ptr<text::Tokenizer> tok_;
  std::unique_ptr<models::PretrainedModel> model_;
  models::HeadConfig head_;
  EncodedSet train_, dev_;
  uint64_t epoch_ = 0, order_epoch_ = std::numeric_limits<uint64_t>::max();
  size_t index_ = 0;
  std::vector<size_t> order_;
  double best_ = -std::numeric_limits<double>::infinity();
};

}  // namespace

std::unique_ptr<Task> make_classification_task(const ClassificationOptions& options, const TaskContext& ctx) {
  return std::make_unique<ClassificationTask>(options, ctx);
}

Scores score_checkpoint(const std::string& checkpoint, const std::string& file, const ClassificationOptions& o, size_t batch_size) {
  auto loaded = models::load_pretrained(checkpoint);
  const auto tok = tokenizer_for(checkpoint, o);
  models::PretrainedModel& model = *loaded.model;
  const EncodedSet set = encode_file(file, o, *tok, head_config_of(model));
  NoGradGuard no_grad;
  model.eval();
  return score_set(model, set, tok->pad_id(), o.regression, batch_size, o.task);
}

void apply_benchmark_task(ClassificationOptions& o) {
  if (o.task.empty()) {
    if (!o.data_dir.empty() || !o.predictions.empty())
      throw std::invalid_argument("[classification] --data-dir and --predictions need --task (a GLUE or SuperGLUE task)");
    return;
  }
  const BenchmarkTask* task = find_benchmark_task(o.task);
  if (!task) throw std::invalid_argument(fmt::format("[classification] --task {}: not a GLUE or SuperGLUE task ({})", o.task, benchmark_task_names()));
  o.label_column = task->labelled.label;
  o.text_column = task->labelled.text;
  o.text_b_column = task->labelled.text_b;
  o.skip_header = task->labelled.skip_header;
  o.regression = task->regression();
  if (o.data_dir.empty()) return;
  const BenchmarkFiles files = benchmark_files(*task, o.data_dir);
  if (o.train.empty()) o.train = files.train;
  if (o.dev.empty()) o.dev = files.dev;
  if (o.test.empty()) o.test = files.test;
}

FinetuneResult run_finetuning(TrainerOptions trainer, ClassificationOptions task) {
  apply_benchmark_task(task);
  if (task.dev.empty()) throw std::invalid_argument("[classification] --dev is required: the best model is chosen on it");
  Trainer t(trainer, BoundOptions(ClassificationOptions::table(), task),
            [&task](const TaskContext& ctx) { return make_classification_task(task, ctx); });
  FinetuneResult result{t.run(), nullptr};
  if (result.run.signal != 0 || (trainer.stop_at >= 0 && result.run.step >= trainer.stop_at)) return result;
  // where the Trainer wrote: --out, else the resumed run's directory
  std::string out = trainer.out;
  if (out.empty()) out = trainer.resume.empty() ? trainer.default_out : fs::path(resolve_checkpoint(trainer.resume)).parent_path().string();
  const std::string best = (fs::path(out) / "best").string();
  if (!fs::exists(best)) throw std::runtime_error(fmt::format("[classification] no best checkpoint in {}: was --eval-every 0?", out));
  nlohmann::json report = nlohmann::json::object();
  auto scored = [&](const std::string& file) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, v] : score_checkpoint(best, file, task, trainer.batch).values) j[name] = v;
    return j;
  };
  report["dev"] = scored(task.dev);
  if (const BenchmarkTask* benchmark = find_benchmark_task(task.task); benchmark && !task.test.empty()) {
    const std::string path = task.predictions.empty() ? (fs::path(out) / benchmark->predictions_file()).string() : task.predictions;
    write_test_predictions(*benchmark, best, task.test, path, task.max_len, trainer.batch);
    if (!trainer.quiet) fmt::print("test predictions for the {} leaderboard: {}\n", benchmark->submission, path);
  } else if (!task.test.empty()) {
    report["test"] = scored(task.test);
  }
  result.scores = report;
  return result;
}

}  // namespace xg::training
