#include "training/tasks/finetuning.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <regex>

#include "models/core/checkpoint.hpp"
#include "models/core/config_fields.hpp"
#include "models/core/family_tokenizer.hpp"
#include "models/core/model_spec.hpp"
#include "models/core/registry.hpp"
#include "training/checkpoints.hpp"
#include "training/distributed.hpp"
#include "training/tasks/pretraining.hpp"
#include "training/tasks/vocabulary.hpp"
#include "util/atomic_file.hpp"
#include "util/json_input.hpp"
#include "util/strings.hpp"

namespace fs = std::filesystem;

namespace xg::training {

const OptionTable<FinetuneOptions>& FinetuneOptions::table() {
  using O = FinetuneOptions;
  constexpr OnResume kRestore = OnResume::Restore;
  static const OptionTable<O> t = OptionTable<O>()
      .add("--task", &O::task, "what to fine-tune for: classification (the default), or a kind or benchmark listed "
                               "under Tasks at the end", kRestore)
      .add("--model-name-or-path,--model", &O::model, "checkpoint directory of any registered family (its encoder is "
                                                      "fine-tuned, the head is new unless it already fits), or a "
                                                      "[family-]size preset (tiny, roberta-small, albert-base, ...) "
                                                      "trained from scratch", kRestore)
      .add("--train-file,--train", &O::train, "labelled training data (format per --task; on --resume-from-checkpoint: the "
                                              "same data in a new place)", OnResume::DataPath)
      .add("--validation-file,--dev", &O::dev, "labelled data evaluated each epoch (or every --eval-steps); the best model "
                                               "is kept in OUTPUT_DIR/best", OnResume::DataPath)
      .add("--test-file,--test", &O::test, "data scored (or, without labels, predicted) with the best model at the end",
           OnResume::DataPath)
      .add("--max-seq-length,--max-len", &O::max_len, "tokens per example or window, special tokens included (longer "
                                                      "texts are truncated or windowed, per --task)", kRestore, at_least(4))
      .add("--tokenizer,--vocab", &O::vocab, "WordPiece vocab.txt or tokenizer directory for a preset (a checkpoint brings "
                                             "its own)", kRestore)
      .add("--cased", &O::cased, "keep case and accents with --tokenizer (default: uncased)", kRestore)
      .add("--allow-tokenizer-mismatch", &O::allow_tokenizer_mismatch, "train a preset on another family's kind of tokenizer "
                                                                       "(a RoBERTa preset on a WordPiece vocab.txt)")
      .add("--max-train-examples", &O::max_train_examples, "train on this many examples, a sample drawn with --seed "
                                                           "(0: all): few-label experiments", kRestore)
      .group(kTrainingGroup)
      .add("--patience", &O::patience, "stop after this many evaluations without a better dev score (0: never stop early)",
           kRestore)
      .add("--layer-lr-decay", &O::layer_lr_decay, "layer-wise rate decay: the head learns at --learning-rate, the top "
                                                   "layer at lr x D, the one below at lr x D^2, ..., the embeddings at "
                                                   "lr x D^(L+1) (1: no decay)", kRestore, between(1e-6, 1))
      .add("--freeze-layers", &O::freeze_layers, "keep the embeddings and this many lowest layers fixed", kRestore)
      .add("--freeze-encoder", &O::freeze_encoder, "train the head only (the whole encoder stays fixed)", kRestore)
      .add("--group-by-length", &O::group_by_length, "batch examples of similar length: each epoch's shuffled order is "
                                                     "sorted by length within runs of 50 batches, so batches pad less",
           kRestore)
      .group(kOutputGroup)
      .add("--predictions", &O::predictions, "write the best model's predictions on --test-file (else --validation-file) "
                                             "to this file, in the task's submission format")
      .add("--score-precision", &O::score_precision, "matmul precision of the best model's final scores on "
                                                     "--validation-file and --test-file: fp32, bf16 or int8 (int8 weights "
                                                     "per output channel, activations per row, as bert_infer --precision "
                                                     "int8 runs it); empty: the training precision", OnResume::UseNew,
           Choices{{"", "fp32", "bf16", "int8"}});
  return t;
}

std::unique_ptr<text::Tokenizer> finetune_tokenizer(const std::string& model_dir, const FinetuneOptions& o) {
  text::TokenizerOptions topt;
  topt.lowercase = !o.cased;
  if (!model_dir.empty()) {
    if (fs::exists(fs::path(model_dir) / "tokenizer_config.json")) return models::load_tokenizer(model_dir);
    if (fs::exists(fs::path(model_dir) / "vocab.txt")) return models::open_tokenizer((fs::path(model_dir) / "vocab.txt").string(), topt);
  }
  return models::open_tokenizer(o.vocab, topt);
}

ScoringModel::ScoringModel(const std::string& checkpoint, const FinetuneOptions& o)
    : model(models::load_pretrained(checkpoint).model), tok(finetune_tokenizer(checkpoint, o)) {  // in eval mode
  if (matmul_precision() == MatmulPrecision::INT8) int8_weights = std::make_unique<nn::InferenceWeights>(*model, MatmulPrecision::INT8);
}

void write_index_predictions(const std::string& path, const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string text = "index\tprediction\n";
  for (const auto& [index, prediction] : rows) {
    for (const std::string* field : {&index, &prediction})
      if (field->find_first_of("\t\n") != std::string::npos)
        throw std::invalid_argument(fmt::format("[predictions] {}: '{}' holds a tab or newline", path, *field));
    text += index + "\t" + prediction + "\n";
  }
  write_text_atomically(path, text);
}

std::string head_architecture(const std::string& model_type, const std::string& head_suffix, const std::string& source) {
  for (const auto& a : models::registered_architectures(model_type))
    if (a.size() > head_suffix.size() && ends_with(a, head_suffix)) return a;
  throw std::invalid_argument(fmt::format("[finetune] {}: the {} family has no *{} head", source, model_type, head_suffix));
}

std::vector<size_t> sample_indices(size_t n, size_t limit, uint64_t seed) {
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  if (limit == 0 || limit >= n) return all;
  std::mt19937_64 rng(seed ^ 0x5851F42D4C957F2DULL);
  for (size_t i = 0; i < limit; ++i) std::swap(all[i], all[i + size_t(rng() % (n - i))]);
  all.resize(limit);
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<std::string> unusual_settings(const TrainerOptions& trainer, const FinetuneOptions& task, size_t ranks,
                                          size_t train_examples) {
  std::vector<std::string> w;
  if (!fs::is_directory(task.model)) return w;  // a preset from scratch: other rates and lengths are normal
  const size_t batch = trainer.batch * trainer.grad_accum * ranks;
  if (trainer.lr < 1e-5f || trainer.lr > 5e-5f)
    w.push_back(fmt::format("--learning-rate {:g} is outside fine-tuning's usual 1e-5..5e-5 for a pre-trained checkpoint", trainer.lr));
  if (batch < 16 || batch > 128)
    w.push_back(fmt::format("the effective batch {} (--per-device-train-batch-size {} x --gradient-accumulation-steps {} x {} ranks) is outside fine-tuning's usual "
                            "16..128", batch, trainer.batch, trainer.grad_accum, ranks));
  if (trainer.epochs == 0) return w;  // --steps: no epochs to judge
  if (trainer.epochs > 10 && task.patience == 0)
    w.push_back(fmt::format("--num-train-epochs {} is more than fine-tuning's usual 2..10 and --patience is 0: the dev score "
                            "picks the best model, but nothing stops the run early", trainer.epochs));
  const double lengthened = double(trainer.min_steps) * double(batch) / double(std::max<size_t>(train_examples, 1));
  const double epochs = std::max(double(trainer.epochs), lengthened);
  if (epochs < 2 && train_examples < 10000)
    w.push_back(fmt::format("--num-train-epochs {} over {} training examples: a small set usually needs 2..10 epochs",
                            trainer.epochs, train_examples));
  return w;
}

// ---- FinetuneTask ----

FinetuneTask::FinetuneTask(const FinetuneOptions& o, const TaskContext& ctx, std::string kind, std::string head_suffix)
    : opt_(o), ctx_(ctx), kind_(std::move(kind)), head_suffix_(std::move(head_suffix)) {
  if (o.train.empty()) throw std::invalid_argument(fmt::format("[{}] --train-file is required", kind_));
  model_is_checkpoint_ = !resuming() && fs::is_directory(o.model);
  // --vocab would be ignored: the checkpoint's own tokenizer is the one its embeddings were trained with
  if (model_is_checkpoint_ && o.flags_given.count("--tokenizer"))
    for (const char* file : {"tokenizer_config.json", "vocab.txt"})
      if (fs::exists(fs::path(o.model) / file))
        throw std::invalid_argument(fmt::format("[{}] --tokenizer applies to a preset, or to a checkpoint without tokenizer files; {} "
                                                "has its own ({}): leave --tokenizer out", kind_, o.model, file));
  tok_ = finetune_tokenizer(resuming() ? ctx.checkpoint : model_is_checkpoint_ ? o.model : "", o);
}

std::vector<size_t> FinetuneTask::sample_training(size_t all) {
  std::vector<size_t> rows = sample_indices(all, opt_.max_train_examples, ctx_.seed);
  train_pool_ = all;
  train_sampled_ = rows.size();
  return rows;
}

void FinetuneTask::load_model(const nlohmann::json& new_head, const std::function<bool(const nlohmann::json&)>& keep_head) {
  if (resuming()) {
    model_ = std::move(models::load_pretrained(ctx_.checkpoint).model);
  } else if (model_is_checkpoint_) {
    const std::string config_path = (fs::path(opt_.model) / "config.json").string();
    const nlohmann::json config = models::config::read_json_file(config_path, kind_);
    const std::string arch = head_architecture(config.value("model_type", ""), head_suffix_, config_path);
    const bool is_head = config.contains("architectures") && config["architectures"].is_array() &&
                         !config["architectures"].empty() && config["architectures"][0] == arch;
    nlohmann::json head = is_head && keep_head(config) ? nlohmann::json::object() : new_head;
    head.erase("classifier_dropout");  // the checkpoint's own, if it has one
    auto loaded = models::load_pretrained(opt_.model, ctx_.seed, arch, head);
    if (!ctx_.quiet) {  // as transformers reports them
      if (!loaded.newly_initialised.empty())
        fmt::print("newly initialised in {} (not in {}): {}\n", arch, opt_.model, fmt::join(loaded.newly_initialised, ", "));
      if (!loaded.dropped.empty())
        fmt::print("not used by {} (dropped from {}): {}\n", arch, opt_.model, fmt::join(loaded.dropped, ", "));
    }
    model_ = std::move(loaded.model);
  } else {
    if (!ctx_.quiet)
      fmt::print("from random weights: --model {} is a preset, not a checkpoint directory (give one to fine-tune pre-trained "
                 "weights)\n", opt_.model);
    nlohmann::json j = models::fresh_model_config(opt_.model, tok_->vocab_size(), tok_->pad_id(), tok_->cls_id(), tok_->sep_id(), opt_.max_len);
    check_tokenizer_family(*tok_, j.at("model_type").get<std::string>(), opt_.model, opt_.allow_tokenizer_mismatch);
    j.update(new_head);
    const std::string source = "--model " + opt_.model;
    model_ = models::build_model(j, source, head_architecture(j.at("model_type").get<std::string>(), head_suffix_, source));
    Generator gen(ctx_.seed);
    model_->init_weights(gen);
  }
  apply_freezing();
}

namespace {

// The encoder layer a parameter belongs to (0-based), from "<prefix>.encoder.layer.N."; -1 for
// the embeddings and anything else below the layers; `layers` for what is above them (pooler, head).
int64_t depth_of(const std::string& name, int64_t layers) {
  static const std::regex layer(R"((^|\.)encoder\.layer\.(\d+)\.)");
  std::smatch m;
  if (std::regex_search(name, m, layer)) return std::stoll(m[2].str());
  if (name.find("embeddings.") != std::string::npos) return -1;
  return layers;
}

// ALBERT's layers share one set of weights: there is no per-layer parameter to freeze or decay.
void check_per_layer_weights(const models::PretrainedModel& m, const std::string& flag) {
  for (const auto& [name, _] : m.named_parameters())
    if (name.find("albert_layer_groups") != std::string::npos)
      throw std::invalid_argument(fmt::format("[finetune] {}: {} shares one layer's weights across all its depths, so "
                                              "there are no per-layer weights to {}; use --freeze-encoder",
                                              flag, m.architecture(), flag == "--freeze-layers" ? "freeze" : "decay"));
}

int64_t num_layers(const models::PretrainedModel& m) {
  return m.family_config_json().value("num_hidden_layers", int64_t(0));
}

}  // namespace

void FinetuneTask::apply_freezing() {
  const int64_t layers = num_layers(*model_);
  if (opt_.freeze_layers > 0) {
    check_per_layer_weights(*model_, "--freeze-layers");
    if (int64_t(opt_.freeze_layers) > layers)
      throw std::invalid_argument(fmt::format("[finetune] --freeze-layers {}: {} has only {} layers", opt_.freeze_layers,
                                              model_source(), layers));
  }
  const bool any = opt_.freeze_encoder || opt_.freeze_layers > 0;
  if (!any) return;
  // The base model's parameters under the full model's names ("bert.encoder...").
  std::set<const TensorImpl*> encoder;
  for (const auto& [_, p] : model_->base_model().named_parameters()) encoder.insert(p.impl().get());
  for (auto& [name, p] : model_->named_parameters()) {
    if (!encoder.count(p.impl().get())) continue;  // the head always learns
    if (opt_.freeze_encoder || depth_of(name, layers) < int64_t(opt_.freeze_layers)) p.requires_grad_(false);
  }
}

std::vector<optim::ParamGroup> FinetuneTask::parameter_groups(float weight_decay) {
  auto groups = optim::bert_param_groups(model_->named_parameters(), weight_decay);
  if (opt_.layer_lr_decay == 1.f) return groups;
  check_per_layer_weights(*model_, "--layer-lr-decay");
  const int64_t layers = num_layers(*model_);
  // Split each decay group by depth: the head at the full rate, each layer below one factor less.
  std::vector<optim::ParamGroup> by_depth;
  for (const auto& g : groups) {
    std::map<int64_t, optim::ParamGroup> split;
    for (const auto& np : g.params) {
      const int64_t depth = depth_of(np.first, layers);
      auto& s = split[depth];
      s.weight_decay = g.weight_decay;
      s.lr_scale = float(std::pow(double(opt_.layer_lr_decay), double(layers - depth)));
      s.layer_adaptation = g.layer_adaptation;
      s.params.push_back(np);
    }
    for (auto& [_, s] : split) by_depth.push_back(std::move(s));
  }
  return by_depth;
}

void FinetuneTask::check_fits(const models::ModelInputs& longest) {
  NoGradGuard no_grad;
  model_->eval();
  model_->forward_named(longest);
  model_->train();
}

void group_by_length(std::vector<size_t>& order, size_t megabatch, const std::function<size_t(size_t)>& length) {
  megabatch = std::max<size_t>(megabatch, 1);
  for (size_t begin = 0; begin < order.size(); begin += megabatch) {
    const auto first = order.begin() + std::ptrdiff_t(begin);
    const auto last = order.begin() + std::ptrdiff_t(std::min(order.size(), begin + megabatch));
    std::vector<std::pair<size_t, size_t>> keyed;  // (length, row), the length computed once
    for (auto it = first; it != last; ++it) keyed.emplace_back(length(*it), *it);
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = 0; i < keyed.size(); ++i) first[std::ptrdiff_t(i)] = keyed[i].second;
  }
}

size_t length_group_size(size_t examples, size_t batch) {
  batch = std::max<size_t>(batch, 1);
  const size_t batches = std::clamp<size_t>(examples / (batch * 4), 1, 50);
  return batches * batch;
}

std::vector<size_t> FinetuneTask::next_rows(size_t batch_size, size_t train_size) {
  if (train_size == 0) throw std::invalid_argument(fmt::format("[{}] {} holds no training examples", kind_, opt_.train));
  std::vector<size_t> rows;
  while (rows.size() < shard_.draw(batch_size)) {
    if (order_epoch_ != epoch_ || order_.size() != train_size) {
      // a fixed permutation per epoch from the seed: a resumed run draws the same batches
      order_.resize(train_size);
      for (size_t i = 0; i < train_size; ++i) order_[i] = i;
      std::mt19937_64 rng(ctx_.seed * 0x9E3779B97F4A7C15ULL + epoch_);
      for (size_t i = train_size; i > 1; --i) std::swap(order_[i - 1], order_[size_t(rng() % i)]);
      if (opt_.group_by_length)
        group_by_length(order_, length_group_size(train_size, batch_size), [this](size_t r) { return train_length(r); });
      order_epoch_ = epoch_;
    }
    rows.push_back(order_[index_]);
    if (++index_ == train_size) index_ = 0, ++epoch_;
  }
  return shard_.keep(std::move(rows));
}

void forget_best_elsewhere(const std::string& out, double& best, size_t& evals_since_best) {
  if (!std::isfinite(best) || fs::exists(fs::path(out) / "best")) return;
  best = -std::numeric_limits<double>::infinity();
  evals_since_best = 0;
}

Evaluation FinetuneTask::evaluate(size_t batch_size) {
  const Scores s = score_dev(batch_size);
  last_score_ = s.values.empty() ? -std::numeric_limits<double>::infinity() : s.main / s.full_scale;
  if (s.values.empty()) return {};
  Evaluation e{s.values, s.summary};
  if (s.main > best_) {  // kept whole, as any checkpoint: a crash mid-save leaves the old best
    best_ = s.main;
    evals_since_best_ = 0;
    save((fs::path(ctx_.out) / "best").string(), [](const std::string&) {});
    e.summary += " (best so far: saved)";
  } else if (opt_.patience > 0 && ++evals_since_best_ >= opt_.patience) {
    e.stop = true;
    e.summary += fmt::format(" (no better score in {} evaluations: stopping, --patience {})", evals_since_best_, opt_.patience);
  }
  return e;
}

nlohmann::json FinetuneTask::data_state() const {
  nlohmann::json best = std::isfinite(best_) ? nlohmann::json(best_) : nlohmann::json(nullptr);
  return {{"epoch", epoch_}, {"index", index_}, {"best", best}, {"evals_since_best", evals_since_best_}};
}

void FinetuneTask::restore_data_state(const nlohmann::json& s) {
  try {
    epoch_ = s.at("epoch").get<uint64_t>();
    index_ = s.at("index").get<size_t>();
    best_ = s.at("best").is_number() ? s.at("best").get<double>() : -std::numeric_limits<double>::infinity();
    evals_since_best_ = s.value("evals_since_best", size_t(0));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("[{}] bad data position {}: {}", kind_, json_summary(s), e.what()));
  }
  forget_best_elsewhere(ctx_.out, best_, evals_since_best_);
  if (index_ >= train_examples_per_epoch())
    throw std::runtime_error(fmt::format("[{}] data position {} is beyond the {} training examples", kind_, index_,
                                         train_examples_per_epoch()));
}

void FinetuneTask::save(const std::string& dir, const std::function<void(const std::string&)>& extra) const {
  models::save_pretrained(*model_, dir, [&](const std::string& tmp) {
    tok_->save_pretrained(tmp);
    extra(tmp);
  });
}

// ---- kinds and the run ----

namespace {
// The index in finetune_kinds() of the kind that accepts `task`; throws listing the names there are.
size_t kind_index(const std::string& task) {
  const std::string wanted = task.empty() ? "classification" : task;
  std::vector<std::string> names;
  const auto& kinds = finetune_kinds();
  for (size_t i = 0; i < kinds.size(); ++i)
    for (const auto& n : kinds[i]->task_names()) {
      if (n == wanted) return i;
      names.push_back(n);
    }
  throw std::invalid_argument(fmt::format("[finetune] --task {}: not a task; use one of {}", wanted, fmt::join(names, ", ")));
}
}  // namespace

FinetuneKind& finetune_kind(const std::string& task) { return *finetune_kinds()[kind_index(task)]; }

std::unique_ptr<FinetuneKind> new_finetune_kind(const std::string& task) {
  auto kinds = make_finetune_kinds();
  return std::move(kinds[kind_index(task)]);
}

std::string task_of_run(const FinetuneOptions& task, const TrainerOptions& trainer) {
  if (!task.task.empty() || trainer.resume.empty()) return task.task;
  return TrainingState::read(resolve_checkpoint(trainer.resume)).options.value("task", std::string());
}

FinetuneResult run_finetuning(TrainerOptions trainer, FinetuneOptions task, FinetuneKind& kind) {
  // a resumed run selects its saved task (squad_v2, not squad) before the checkpoint's options are restored
  task.task = task_of_run(task, trainer);
  kind.select(task.task, task);  // a benchmark's --data-dir may name the files
  if (task.train.empty() && trainer.resume.empty()) throw std::invalid_argument("[finetune] --train-file is required");
  // a resumed run takes both from its checkpoint's options
  if (task.dev.empty() && trainer.resume.empty())
    throw std::invalid_argument("[finetune] --validation-file is required: the best model is chosen on it");
  if (!task.test.empty() && !fs::is_regular_file(task.test))  // read at the end: found missing now, not after training
    throw std::invalid_argument(fmt::format("[finetune] --test-file {}: no such file", task.test));
  const bool rank0 = Communicator::world().rank() == 0;
  const size_t ranks = size_t(Communicator::world().size());
  size_t pool = 0, sampled = 0;
  Trainer t(trainer, BoundOptions::join({BoundOptions(FinetuneOptions::table(), task), kind.options()}),
            [&](const TaskContext& ctx) {
              std::unique_ptr<Task> made = kind.make_task(task, ctx);
              if (const auto* f = dynamic_cast<const FinetuneTask*>(made.get())) pool = f->train_pool(), sampled = f->train_sampled();
              if (const auto* m = dynamic_cast<const models::PretrainedModel*>(&made->model()))  // before any batch is made
                refuse_if_too_big_to_train(m->config_json(), ctx.batch, task.max_len);
              if (rank0 && !trainer.quiet && ctx.checkpoint.empty() && task.warn_unusual)  // a resumed run was warned when it started
                for (const auto& w : unusual_settings(trainer, task, ranks, sampled)) fmt::print(stderr, "warning: {}\n", w);
              return made;
            });
  FinetuneResult result{t.run(), pool, sampled, nullptr};
  if (result.run.signal != 0 || (trainer.stop_at >= 0 && result.run.step >= trainer.stop_at)) return result;
  if (Communicator::world().rank() != 0) return result;  // rank 0 alone kept OUT/best and reports
  const std::string& out = result.run.out;
  const std::string best = (fs::path(out) / "best").string();
  if (!fs::exists(best))
    throw std::runtime_error(fmt::format("[finetune] no best checkpoint in {}: no evaluation saved one (--eval-steps 0, or a "
                                         "resumed run with no step left to train)", out));
  const std::string dev_predictions = task.test.empty() ? task.predictions : "";
  // scored as evaluated during training, unless --score-precision says otherwise
  const MatmulPrecisionGuard precision(task.score_precision.empty() ? run_precision(trainer)
                                                                    : matmul_precision_from_name(task.score_precision));
  nlohmann::json report = nlohmann::json::object();
  if (!task.score_precision.empty()) report["precision"] = task.score_precision;
  report["dev"] = kind.score_file(best, task.dev, task, trainer.batch, dev_predictions);
  if (!task.test.empty()) {
    nlohmann::json test = kind.score_file(best, task.test, task, trainer.batch, task.predictions);
    if (!test.empty()) report["test"] = std::move(test);  // an unlabelled test file is only predicted
  }
  result.scores = report;
  return result;
}

}  // namespace xg::training
