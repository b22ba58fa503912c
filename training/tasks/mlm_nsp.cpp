#include "training/tasks/mlm_nsp.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include <unistd.h>

#include "models/checkpoint.hpp"
#include "text/load_tokenizer.hpp"
#include "text/wordpiece_trainer.hpp"
#include "training/batch.hpp"
#include "training/tasks/instance_sources.hpp"
#include "util/json_input.hpp"
#include "util/progress.hpp"

namespace fs = std::filesystem;

namespace xg::training {

const OptionTable<MlmNspOptions>& MlmNspOptions::table() {
  using O = MlmNspOptions;
  constexpr OnResume kRestore = OnResume::Restore;
  static const OptionTable<O> t = OptionTable<O>()
      .add("--corpus", &O::corpus, "text in the BERT format (a sentence per line, blank line between documents) "
                                   "or a directory of create_pretraining_data shards", kRestore)
      .add("--vocab", &O::vocab, "WordPiece vocab.txt or a Hugging Face tokenizer directory (a resumed run uses its checkpoint's)", kRestore)
      .add("--train-vocab", &O::train_vocab, "train a WordPiece vocabulary of SIZE tokens from the corpus instead of --vocab (0: no)", kRestore)
      .add("--cased", &O::cased, "keep case and accents (default: uncased)", kRestore)
      .add("--model", &O::model, "preset (tiny, mini, small, medium, base, large) or a config.json", kRestore)
      .add("--seq-len", &O::seq_len, "tokens per sequence", kRestore, at_least(8))
      .add("--max-predictions", &O::max_predictions, "masked tokens per sequence at most", kRestore)
      .add("--masked-lm-prob", &O::masked_lm_prob, "fraction of tokens masked", kRestore, between(0, 1))
      .add("--whole-word-mask", &O::whole_word_mask, "mask all pieces of a word together", kRestore)
      .add("--eval-instances", &O::eval_instances, "held-out instances", kRestore)
      .add("--checkpoint-activations", &O::checkpoint_activations,
           "gradient checkpointing: keep only each encoder layer's input and recompute the layer in the "
           "backward pass (less memory, one more forward)");
  return t;
}

models::BertConfig bert_config_for(const std::string& model, size_t vocab_size, size_t seq_len) {
  const bool looks_like_path = model.find('/') != std::string::npos || fs::path(model).extension() == ".json";
  if (looks_like_path && !fs::is_regular_file(model))
    throw std::invalid_argument(fmt::format("[mlm_nsp] --model {}: no such config file", model));
  models::BertConfig c = fs::exists(model) ? models::BertConfig::from_file(model) : models::BertConfig::preset(model);
  c.vocab_size = vocab_size;
  c.max_position_embeddings = std::max(c.max_position_embeddings, seq_len);
  c.validate();
  return c;
}

namespace {

// Bytes a training step needs, roughly: weights, gradients and two Adam moments; per layer and
// sequence the activations kept for backward (hidden-sized tensors, the feed-forward's, and the
// attention's scores and probabilities; one layer's with --checkpoint-activations, plus each
// layer's input); the MLM logits. In double: absurd sizes must not wrap. It over-estimates the
// measured peaks (README: BERT-Base 8 x 128 and 8 x 512) by 20 to 35%.
struct MemoryEstimate {
  double parameters = 0, activations = 0;
  double total() const { return parameters + activations; }
};
MemoryEstimate training_memory(const models::BertConfig& c, size_t batch, size_t seq_len, size_t max_predictions,
                               bool checkpoint_activations) {
  const double h = double(c.hidden_size), layers = double(c.num_hidden_layers), t = double(seq_len);
  const double params = (double(c.vocab_size) + double(c.max_position_embeddings) + double(c.type_vocab_size)) * h +
                        layers * (4 * h * h + 2 * h * double(c.intermediate_size)) + double(c.vocab_size) + h * h;
  const double per_layer = t * h * 20 + t * double(c.intermediate_size) * 3 + double(c.num_attention_heads) * t * t * 3;
  const double per_sequence = (checkpoint_activations ? per_layer + layers * t * h : layers * per_layer) +
                              double(max_predictions) * double(c.vocab_size) * 3;
  return {params * 4 * 4, double(batch) * per_sequence * 4};
}

double physical_memory_bytes() { return double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE)); }

// Refuses, before allocating, what needs far more memory than the machine has: absurd sizes end in
// a message with the estimate, not in std::bad_alloc. `batch` 0: the model alone.
void refuse_if_too_big(const models::BertConfig& c, size_t batch, const MlmNspOptions& o) {
  const MemoryEstimate need = training_memory(c, batch, o.seq_len, o.max_predictions, o.checkpoint_activations);
  const double have = physical_memory_bytes();
  if (need.total() <= 2 * have) return;  // the estimate is rough: refuse only what cannot be near
  std::string activations;
  if (batch > 0) activations = fmt::format("; {:.3g} GB of activations for --batch {} x --seq-len {}", need.activations / 1e9, batch, o.seq_len);
  throw std::invalid_argument(fmt::format(
      "[mlm_nsp] training needs about {:.3g} GB ({:.3g} GB of weights, gradients and optimizer state for {} layers of "
      "hidden_size {}, intermediate_size {}, vocab_size {}, max_position_embeddings {}{}), more than twice this machine's "
      "{:.3g} GB of memory",
      need.total() / 1e9, need.parameters / 1e9, c.num_hidden_layers, c.hidden_size, c.intermediate_size, c.vocab_size,
      c.max_position_embeddings, activations, have / 1e9));
}

// Where the tokenizer and the model are made: the checkpoint's on resume, else from the options.
std::unique_ptr<text::Tokenizer> make_tokenizer(const MlmNspOptions& o, const TaskContext& ctx) {
  std::string vocab_path = o.vocab;
  if (!ctx.checkpoint.empty()) {
    // the checkpoint's tokenizer; checkpoints from before tokenizer files carry vocab.txt only
    const bool has_tokenizer_files = fs::exists(fs::path(ctx.checkpoint) / "tokenizer_config.json");
    vocab_path = has_tokenizer_files ? ctx.checkpoint : (fs::path(ctx.checkpoint) / "vocab.txt").string();
  } else if (o.train_vocab > 0) {
    if (fs::is_directory(o.corpus)) throw std::invalid_argument("[mlm_nsp] --train-vocab needs a text corpus, not shards");
    text::WordPieceTrainerOptions to;
    to.vocab_size = o.train_vocab;
    to.normalization.lowercase = !o.cased;
    Progress p("training vocabulary", 0, "merges");
    const text::Vocab v = text::train_wordpiece({o.corpus}, to, [&](size_t done, size_t) {
      if (!ctx.quiet) p.update(done);
    });
    if (!ctx.quiet) p.finish(fmt::format("{} tokens", v.size()));
    vocab_path = (fs::path(ctx.out) / "vocab.txt").string();
    v.save(vocab_path);
  }
  text::TokenizerOptions topt;
  topt.lowercase = !o.cased;
  return text::open_tokenizer(vocab_path, topt);
}

std::unique_ptr<models::BertForPreTraining> make_model(const MlmNspOptions& o, const TaskContext& ctx, size_t vocab_size) {
  std::unique_ptr<models::BertForPreTraining> model;
  if (!ctx.checkpoint.empty()) {
    model = std::move(models::load_pretrained_as<models::BertForPreTraining>(ctx.checkpoint).model);
  } else {
    const models::BertConfig config = bert_config_for(o.model, vocab_size, o.seq_len);
    refuse_if_too_big(config, 0, o);
    model = std::make_unique<models::BertForPreTraining>(config);
    Generator init_gen(ctx.seed);
    model->init_weights(init_gen);
  }
  model->bert->encoder->checkpoint_activations = o.checkpoint_activations;
  if (model->config.vocab_size != vocab_size)
    throw std::invalid_argument(fmt::format("[mlm_nsp] the model's vocab_size {} differs from the vocabulary's {} tokens",
                                            model->config.vocab_size, vocab_size));
  return model;
}

class MlmNspTask : public Task {
 public:
  MlmNspTask(const MlmNspOptions& o, const TaskContext& ctx) : opt_(o), tok_(make_tokenizer(o, ctx)) {
    load_data(ctx);
    model_ = make_model(o, ctx, tok_->vocab_size());
  }

  std::string name() const override { return "mlm_nsp"; }
  std::string describe() const override {
    const auto& c = model_->config;
    return fmt::format("model: {} layers, hidden {}, {} heads, {:.1f}M parameters; vocabulary {}; {} training instances per "
                       "epoch, {} held out; sequences of {} tokens",
                       c.num_hidden_layers, c.hidden_size, c.num_attention_heads, double(model_->num_parameters()) / 1e6,
                       tok_->vocab_size(), source_->epoch_size(pos_.epoch), eval_.size(), opt_.seq_len);
  }
  nn::Module& model() override { return *model_; }
  size_t train_examples_per_epoch() override { return source_->epoch_size(0); }

  BatchLoss next_batch_loss(size_t batch_size) override {
    if (!memory_checked_) refuse_if_too_big(model_->config, batch_size, opt_);
    memory_checked_ = true;
    const Batch b = make_batch(next_instances(*source_, pos_, batch_size), opt_.seq_len, tok_->pad_id());
    const auto out = model_->forward(b.inputs, b.targets);
    return {out.loss,
            {{"mlm", out.mlm_loss.item()}, {"nsp", out.nsp_loss.item()}},
            {{"masked", double(b.targets.masked_labels.numel())}, {"mlm_correct", double(out.mlm_correct)},
             {"sequences", double(b.inputs.batch())}, {"nsp_correct", double(out.nsp_correct)}},
            b.real_tokens};
  }

  Scalars train_metrics(const Counts& c) const override {
    auto count = [&](const char* name) { return c.count(name) ? c.at(name) : 0.0; };
    return {{"mlm_acc", count("mlm_correct") / std::max(count("masked"), 1.0)},
            {"nsp_acc", count("nsp_correct") / std::max(count("sequences"), 1.0)}};
  }

  Evaluation evaluate(size_t batch_size) override {
    if (eval_.empty()) return {};
    size_t masked = 0, mlm_correct = 0, nsp_correct = 0;
    double mlm_loss_sum = 0, nsp_loss_sum = 0;
    for (size_t s = 0; s < eval_.size(); s += batch_size) {
      const std::vector<text::Instance> part(eval_.begin() + long(s), eval_.begin() + long(std::min(eval_.size(), s + batch_size)));
      const Batch b = make_batch(part, opt_.seq_len, tok_->pad_id());
      const auto out = model_->forward(b.inputs, b.targets);
      const size_t m = b.targets.masked_labels.numel();
      masked += m;
      mlm_correct += out.mlm_correct;
      nsp_correct += out.nsp_correct;
      mlm_loss_sum += double(out.mlm_loss.item()) * double(m);  // the loss is a mean: weigh by its count
      nsp_loss_sum += double(out.nsp_loss.item()) * double(part.size());
    }
    const double mlm_acc = double(mlm_correct) / double(std::max<size_t>(masked, 1));
    const double nsp_acc = double(nsp_correct) / double(eval_.size());
    const double mlm_loss = mlm_loss_sum / double(std::max<size_t>(masked, 1));
    const double nsp_loss = nsp_loss_sum / double(eval_.size());
    return {{{"mlm_acc", mlm_acc}, {"nsp_acc", nsp_acc}, {"perplexity", std::exp(mlm_loss)}, {"mlm_loss", mlm_loss}, {"nsp_loss", nsp_loss}},
            fmt::format("MLM accuracy {:.2f}%, NSP accuracy {:.2f}%, perplexity {:.1f}", 100 * mlm_acc, 100 * nsp_acc, std::exp(mlm_loss))};
  }

  nlohmann::json data_state() const override { return {{"epoch", pos_.epoch}, {"index", pos_.index}}; }
  void restore_data_state(const nlohmann::json& s) override {
    try {
      pos_ = {s.at("epoch").get<uint64_t>(), s.at("index").get<size_t>()};
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("[mlm_nsp] bad data position {}: {}", json_summary(s), e.what()));
    }
  }

  void save(const std::string& dir, const std::function<void(const std::string&)>& extra) const override {
    // The tokenizer files are written from memory: the files it came from may be a checkpoint
    // that --keep has since removed.
    models::save_pretrained(*model_, dir, [&](const std::string& tmp) {
      tok_->save_pretrained(tmp);
      extra(tmp);
    });
  }

 private:
  void load_data(const TaskContext& ctx) {
    text::PretrainingOptions popt;
    popt.max_seq_length = opt_.seq_len;
    popt.max_predictions_per_seq = opt_.max_predictions;
    popt.masked_lm_prob = opt_.masked_lm_prob;
    popt.whole_word_mask = opt_.whole_word_mask;
    popt.seed = ctx.seed;
    popt.dupe_factor = 1;
    if (opt_.max_predictions == 0 || opt_.max_predictions > opt_.seq_len)
      throw std::invalid_argument(fmt::format("[mlm_nsp] --max-predictions {} must be in [1, --seq-len {}]", opt_.max_predictions,
                                              opt_.seq_len));
    popt.validate();
    if (fs::is_directory(opt_.corpus)) {
      auto s = std::make_unique<ShardSource>(opt_.corpus, opt_.eval_instances, eval_);
      if (s->max_seq_length() > opt_.seq_len)
        throw std::invalid_argument(fmt::format("[mlm_nsp] the shards hold sequences up to {} tokens; --seq-len is {}",
                                                s->max_seq_length(), opt_.seq_len));
      if (s->vocab_size() != tok_->vocab_size())
        throw std::invalid_argument(fmt::format("[mlm_nsp] the shards in {} were made with a vocabulary of {} tokens; the "
                                                "tokenizer has {}", opt_.corpus, s->vocab_size(), tok_->vocab_size()));
      source_ = std::move(s);
      return;
    }
    Progress p("reading corpus", 0, "lines");
    auto docs = text::load_documents(opt_.corpus, *tok_, [&](size_t done, size_t) {
      if (!ctx.quiet) p.update(done);
    });
    if (!ctx.quiet) p.finish(fmt::format("{} documents", docs.size()));
    // Hold out the last 2% of documents (at least one) for evaluation.
    if (docs.size() >= 2 && opt_.eval_instances > 0) {
      const size_t held = std::max<size_t>(1, docs.size() / 50);
      std::vector<text::Document> eval_docs(docs.end() - long(held), docs.end());
      docs.resize(docs.size() - held);
      text::PretrainingOptions eopt = popt;
      eopt.seed = ctx.seed + 1;
      eval_ = text::create_static_instances(eval_docs, eopt, text::MaskingVocab::from(*tok_));
      if (eval_.size() > opt_.eval_instances) eval_.resize(opt_.eval_instances);
    }
    source_ = std::make_unique<DynamicSource>(std::move(docs), popt, text::MaskingVocab::from(*tok_));
  }

  const MlmNspOptions opt_;
  const std::unique_ptr<text::Tokenizer> tok_;
  std::unique_ptr<InstanceSource> source_;
  std::vector<text::Instance> eval_;
  DataPosition pos_;
  std::unique_ptr<models::BertForPreTraining> model_;
  bool memory_checked_ = false;
};

}  // namespace

std::unique_ptr<Task> make_mlm_nsp_task(const MlmNspOptions& options, const TaskContext& ctx) {
  return std::make_unique<MlmNspTask>(options, ctx);
}

RunResult run_pretraining(TrainerOptions trainer, MlmNspOptions task) {
  Trainer t(std::move(trainer), BoundOptions(MlmNspOptions::table(), task),
            [&task](const TaskContext& ctx) { return make_mlm_nsp_task(task, ctx); });
  return t.run();
}

}  // namespace xg::training
