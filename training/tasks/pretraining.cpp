#include "training/tasks/pretraining.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "autograd/engine.hpp"
#include "autograd/parallel.hpp"
#include "models/core/checkpoint.hpp"
#include "models/core/model_spec.hpp"
#include "models/core/pretraining.hpp"
#include "models/core/registry.hpp"
#include "models/core/vocab_extension.hpp"
#include "nn/transformer.hpp"
#include "text/bert_tokenizer.hpp"
#include "text/domain_words.hpp"
#include "training/batch.hpp"
#include "training/distributed.hpp"
#include "training/tasks/instance_sources.hpp"
#include "training/tasks/vocabulary.hpp"
#include "util/checksums.hpp"
#include "util/json_input.hpp"
#include "util/progress.hpp"

namespace fs = std::filesystem;

namespace xg::training {

const OptionTable<PretrainOptions>& PretrainOptions::table() {
  using O = PretrainOptions;
  constexpr OnResume kRestore = OnResume::Restore;
  static const OptionTable<O> t = OptionTable<O>()
      .add("--train-file,--corpus", &O::corpus, "text in the BERT format (a sentence per line, blank line between documents) "
                                   "or a directory of create_pretraining_data shards (on --resume-from-checkpoint: the same data in a new "
                                   "place, checked by its size and CRC32C or its shards' names and sizes)", OnResume::DataPath)
      .add("--tokenizer,--vocab", &O::tokenizer,
           "WordPiece vocab.txt, byte-level BPE vocab.json (merges.txt beside it), SentencePiece .model, or a Hugging "
           "Face tokenizer directory (default: bert_pretrain trains one of 8000 tokens on a text corpus; with shards, "
           "BERT's bundled bert-base-uncased vocabulary; a resumed run uses its checkpoint's)", kRestore)
      .add("--train-vocab", &O::train_vocab, "train a vocabulary of SIZE tokens from the corpus, of the model's kind "
                                             "(WordPiece, byte-level BPE, SentencePiece) instead of --tokenizer (0: no)", kRestore)
      .add("--cased", &O::cased, "keep case and accents (default: uncased; byte-level BPE is always cased)", kRestore)
      .add("--allow-tokenizer-mismatch", &O::allow_tokenizer_mismatch, "train a model on another family's kind of tokenizer "
                                                                       "(a RoBERTa model on a WordPiece vocab.txt)")
      .add("--model", &O::model, "[family-]size: tiny, mini, small, medium, base, large (BERT), roberta-tiny ... "
                                 "roberta-large, albert-tiny ... albert-xxlarge, electra-tiny ... electra-large; or a config.json (\"\": tiny; with "
                                 "--init-from the checkpoint's config, which a conflicting --model may not change)", kRestore)
      .add("--pairing", &O::pairing, "auto (the family's recipe: BERT nsp, RoBERTa and ELECTRA full-sentences, ALBERT sop), nsp, "
                                     "sop, full-sentences or doc-sentences (MLM only)", kRestore,
           Choices{{"auto", "nsp", "sop", "full-sentences", "doc-sentences"}})
      .add("--max-seq-length,--seq-len", &O::seq_len, "tokens per sequence, special tokens included", kRestore, at_least(8))
      .add("--max-predictions", &O::max_predictions, "masked tokens per sequence at most (0: --mlm-probability x --max-seq-length, rounded up)", kRestore)
      .add("--mlm-probability,--masked-lm-prob", &O::masked_lm_prob, "fraction of tokens masked", kRestore, between(0, 1))
      .add("--whole-word-mask", &O::whole_word_mask, "mask all pieces of a word together", kRestore)
      .add("--max-ngram", &O::max_ngram, "mask spans of up to N whole words, n drawn with probability ~ 1/n (0: the model's "
                                         "recipe: 3 for ALBERT, 1 otherwise)", kRestore, between(0, 16))
      .add("--eval-instances", &O::eval_instances, "held-out instances", kRestore)
      .add("--eval-min-documents", &O::eval_min_documents, "documents of a text corpus held out for evaluation at least "
                                                           "(2% of them when that is more; from one, every held-out NSP "
                                                           "negative would pair sentences of that document)", kRestore, at_least(1))
      .older_checkpoints_ran_with(size_t(1))
      .add("--eval-documents-at", &O::eval_documents_at, "where the held-out documents are: spread evenly through the "
                                                         "corpus (one in the middle of each of as many equal stretches), "
                                                         "or at its end", kRestore, Choices{{"spread", "end"}})
      .older_checkpoints_ran_with(std::string("end"))
      .group(kPerformanceGroup)
      .add("--checkpoint-activations", &O::checkpoint_activations,
           "gradient checkpointing: keep only each encoder layer's input and recompute the layer in the "
           "backward pass (less memory, one more forward)")
      .group(kModelAndDataGroup)
      .add("--init-from", &O::init_from, "domain-adaptive pre-training: start from this checkpoint directory's weights "
                                         "and tokenizer (any family; its config shapes the model) with a fresh optimizer "
                                         "and schedule, unlike --resume-from-checkpoint", kRestore)
      .add("--extend-vocab", &O::extend_vocab, "with --init-from: add the N most frequent words of the corpus's training "
                                               "documents that the tokenizer splits into pieces as new tokens, their "
                                               "embeddings the mean of their pieces' (WordPiece vocabularies only)", kRestore)
      .add("--extend-min-count", &O::extend_min_count, "occurrences a word needs for --extend-vocab", kRestore, at_least(1))
      .add("--extend-min-pieces", &O::extend_min_pieces, "pieces a word must be split into for --extend-vocab", kRestore,
           at_least(2));
  return t;
}

namespace {

models::SentenceTask sentence_task_of(text::Pairing p) {
  switch (p) {
    case text::Pairing::NextSentence: return models::SentenceTask::NextSentence;
    case text::Pairing::SentenceOrder: return models::SentenceTask::SentenceOrder;
    default: return models::SentenceTask::None;
  }
}

// The pairing a sentence task trains on (MLM alone: FULL-SENTENCES packing).
text::Pairing pairing_of(models::SentenceTask t) {
  switch (t) {
    case models::SentenceTask::NextSentence: return text::Pairing::NextSentence;
    case models::SentenceTask::SentenceOrder: return text::Pairing::SentenceOrder;
    case models::SentenceTask::None: break;
  }
  return text::Pairing::FullSentences;
}

// --pairing: "auto" is the family's recipe, the sentence task of its first pre-training head.
text::Pairing resolve_pairing(const std::string& pairing, const std::string& model_type) {
  if (pairing != "auto") return text::parse_pairing(pairing);
  const auto heads = models::pretraining_architectures(model_type);
  if (heads.empty()) throw std::invalid_argument(fmt::format("[pretraining] model_type '{}' has no pre-training heads", model_type));
  return pairing_of(heads.front().first);
}

// --pairing for a model loaded from a checkpoint of `architecture`: "auto" continues what its heads
// train (BertForPreTraining: MLM + NSP; BertForMaskedLM: MLM alone). A checkpoint without a
// pre-training head (BertModel, a classifier) continues with MLM alone on FULL-SENTENCES, with a
// fresh MLM head where it has none: a sentence head trained from nothing beside a trained encoder
// would only add noise to the encoder's updates; --pairing nsp|sop asks for one anyway.
text::Pairing checkpoint_pairing(const std::string& pairing, const std::string& model_type, const std::string& architecture,
                                 bool quiet) {
  if (pairing != "auto" || architecture.empty()) return resolve_pairing(pairing, model_type);  // no name: the family's first head
  for (const auto& [task, name] : models::pretraining_architectures(model_type))
    if (name == architecture) return pairing_of(task);
  const text::Pairing recipe = resolve_pairing("auto", model_type);
  if (!quiet && recipe != text::Pairing::FullSentences)
    fmt::print("{} has no {} head: continuing with MLM alone (full-sentences); --pairing {} trains a new one\n",
               architecture, text::pairing_name(recipe), text::pairing_name(recipe));
  return text::Pairing::FullSentences;
}

// The family's head model for `pairing`'s sentence task.
std::string architecture_for(const std::string& model_type, text::Pairing pairing) {
  const models::SentenceTask wanted = sentence_task_of(pairing);
  std::vector<std::string> offered;
  for (const auto& [task, name] : models::pretraining_architectures(model_type)) {
    if (task == wanted) return name;
    offered.push_back(fmt::format("{} ({})", name, models::sentence_task_name(task)));
  }
  throw std::invalid_argument(fmt::format("[pretraining] --pairing {}: model_type '{}' has no pre-training head for {} "
                                          "(it has: {})", text::pairing_name(pairing), model_type,
                                          models::sentence_task_name(wanted), fmt::join(offered, ", ")));
}

// The shards' pairing and tokenizer (DIR/shards.json) against this run's: `model_type` says which
// --pairing values could train on them, `checkpoint` is the one the run resumes or starts from
// ("" for a fresh model), whose tokenizer the run uses and, on --resume, whose --pairing it keeps.
// Shards made before shards.json are taken on trust, with a note.
void check_shard_recipe(const std::string& dir, const std::optional<text::ShardRecipe>& recipe, text::Pairing pairing,
                        const std::string& model_type, const text::Tokenizer& tok, const std::string& checkpoint,
                        bool resuming, bool quiet) {
  const std::string run_pairing = text::pairing_name(pairing);
  if (!recipe) {
    if (!quiet)
      fmt::print("note: {} has no {} (shards made before it was written): that they were made with --pairing {} and this "
                 "run's tokenizer is not checked\n", dir, text::kShardRecipeFile, run_pairing);
    return;
  }
  // The records carry the sentence task's labels; full-sentences and doc-sentences differ only in
  // how the text was packed, and either trains MLM alone.
  const text::Pairing made = text::parse_pairing(recipe->pairing);
  if (sentence_task_of(made) != sentence_task_of(pairing)) {
    bool family_can = !resuming;  // a resumed run keeps its checkpoint's --pairing
    try {
      architecture_for(model_type, made);
    } catch (const std::invalid_argument&) {
      family_can = false;
    }
    throw std::invalid_argument(fmt::format(
        "[pretraining] the shards in {} were made with --pairing {} ({}); this run trains --pairing {}: {}make shards with "
        "create_pretraining_data --pairing {}", dir, recipe->pairing, text::kShardRecipeFile, run_pairing,
        family_can ? fmt::format("pass --pairing {}, or ", recipe->pairing) : "", run_pairing));
  }
  if (const auto ids = text::probe_ids(tok, recipe->probe_text); ids != recipe->probe_ids)
    throw std::invalid_argument(fmt::format(
        "[pretraining] the shards in {} were made with another tokenizer: it made ids [{}] of \"{}\", this run's tokenizer "
        "makes [{}] ({})", dir, fmt::join(recipe->probe_ids, ", "), recipe->probe_text, fmt::join(ids, ", "),
        checkpoint.empty() ? "--tokenizer, or --cased if the shards were made with it"
                           : fmt::format("the tokenizer of {}: make the shards with create_pretraining_data --tokenizer {}",
                                         checkpoint, checkpoint)));
}

// Shards hold masks drawn when they were made: a masking flag given for a run on them cannot
// change them. One that differs from what shards.json recorded is refused; without a record, a
// note says the flags do nothing.
void check_shard_masking(const std::string& dir, const std::optional<text::ShardRecipe>& recipe, const PretrainOptions& o,
                         bool quiet) {
  const auto given = [&](const char* flag) { return o.flags_given.count(flag) > 0; };
  const auto refuse = [&](const std::string& run, const std::string& made, const std::string& remake) {
    return std::invalid_argument(fmt::format("[pretraining] {}: the shards in {} were masked {} when they were made ({}), "
                                             "and shards keep their masks: make them again with create_pretraining_data {}",
                                             run, dir, made, text::kShardRecipeFile, remake));
  };
  const std::optional<float> made_prob = recipe ? recipe->masked_lm_prob : std::nullopt;
  const std::optional<bool> made_whole = recipe ? recipe->whole_word_mask : std::nullopt;
  if (made_prob && given("--mlm-probability") && *made_prob != o.masked_lm_prob)
    throw refuse(fmt::format("--mlm-probability {}", o.masked_lm_prob), fmt::format("at {}", *made_prob),
                 fmt::format("--mlm-probability {}", o.masked_lm_prob));
  if (made_whole && given("--whole-word-mask") && *made_whole != o.whole_word_mask)
    throw refuse(fmt::format("--whole-word-mask {}", o.whole_word_mask ? "on" : "off"),
                 *made_whole ? "whole words at a time" : "piece by piece",
                 o.whole_word_mask ? "--whole-word-mask" : "without --whole-word-mask");
  std::vector<std::string> unchecked;  // given, with nothing recorded to hold them against
  if (given("--mlm-probability") && !made_prob) unchecked.push_back("--mlm-probability");
  if (given("--whole-word-mask") && !made_whole) unchecked.push_back("--whole-word-mask");
  if (given("--max-ngram")) unchecked.push_back("--max-ngram");  // never recorded
  if (!unchecked.empty() && !quiet)
    fmt::print("note: {} cannot change the masks of the shards in {}, drawn when they were made\n",
               fmt::join(unchecked, ", "), dir);
}

}  // namespace

OptimizerDefaults pretraining_optimizer_defaults(const std::string& model_type) {
  const models::PretrainingRecipe r = models::family_entry(model_type).recipe;
  return {r.optimizer, r.beta2, r.eps};
}

std::string pretraining_architecture(const PretrainOptions& o) {
  const std::string type = models::spec_model_type(o.model_or_default());
  return architecture_for(type, resolve_pairing(o.pairing, type));
}

namespace {

// The accuracy of always answering the held-out set's own most frequent masked token ("the", ","):
// what a model that learned only token frequencies reaches, the bar a run must clear to show it
// learned anything from context.
double most_frequent_label_share(const std::vector<text::Instance>& instances) {
  std::unordered_map<int32_t, size_t> counts;
  size_t total = 0, best = 0;
  for (const auto& in : instances)
    for (int32_t label : in.masked_labels) best = std::max(best, ++counts[label]), ++total;
  return total == 0 ? 0.0 : double(best) / double(total);
}

size_t max_predictions_of(const PretrainOptions& o) {
  const size_t n = o.max_predictions > 0 ? o.max_predictions : size_t(std::ceil(double(o.masked_lm_prob) * double(o.seq_len)));
  if (n == 0 || n > o.seq_len)
    throw std::invalid_argument(fmt::format("[pretraining] --max-predictions {} must be in [1, --max-seq-length {}]", n, o.seq_len));
  return n;
}

// `checkpoint`: the directory the model comes from (--resume, --init-from), whose tokenizer is used.
// `trained`, when set, says whether a vocabulary was trained on the corpus.
std::unique_ptr<text::Tokenizer> make_tokenizer(const PretrainOptions& o, const std::string& model_type, const TaskContext& ctx,
                                                const std::string& checkpoint, bool* trained = nullptr) {
  VocabularyRequest r{model_type, o.tokenizer, o.train_vocab, o.corpus, ctx.out, o.cased, ctx.quiet,
                      [o](size_t documents) { return held_out_documents(documents, o); }};  // unseen by the vocabulary too
  if (!checkpoint.empty()) {
    // the checkpoint's tokenizer; checkpoints from before tokenizer files carry vocab.txt only
    const bool has_tokenizer_files = fs::exists(fs::path(checkpoint) / "tokenizer_config.json");
    r.path = has_tokenizer_files ? checkpoint : (fs::path(checkpoint) / "vocab.txt").string();
    r.train_size = 0;
    r.cased = false;  // the checkpoint's files say
  } else if (r.path.empty() && r.train_size == 0) {
    r.path = default_tokenizer_path(model_type);
    if (r.path.empty()) {
      r.train_size = PretrainOptions::kDefaultTrainedVocab;
      if (!ctx.quiet && !fs::is_directory(o.corpus))  // shards are refused: they were made with a vocabulary
        fmt::print("{} has no bundled tokenizer: training one of {} tokens on {} (--tokenizer or --train-vocab to choose)\n",
                   model_type, r.train_size, o.corpus);
    }
  }
  if (trained) *trained = r.train_size > 0;
  return make_vocabulary(r);
}

// What --init-from and --extend-vocab exclude, refused before anything is read.
void check_init_from_options(const PretrainOptions& o) {
  if (o.init_from.empty()) {
    if (o.extend_vocab > 0) throw std::invalid_argument("[pretraining] --extend-vocab extends the vocabulary of --init-from's checkpoint: pass --init-from");
    return;
  }
  auto refuse = [&](const char* flag) {
    throw std::invalid_argument(fmt::format("[pretraining] {} with --init-from {}: the checkpoint's tokenizer is used (its token "
                                            "ids are what the embeddings were trained on); --extend-vocab adds words to it",
                                            flag, o.init_from));
  };
  if (!o.tokenizer.empty()) refuse("--tokenizer");
  if (o.train_vocab > 0) refuse("--train-vocab");
  if (o.cased) refuse("--cased");
  if (!fs::is_directory(o.init_from))
    throw std::invalid_argument(fmt::format("[pretraining] --init-from {}: not a checkpoint directory", o.init_from));
  if (o.extend_vocab > 0 && fs::is_directory(o.corpus))
    throw std::invalid_argument(fmt::format("[pretraining] --extend-vocab needs a text corpus to count words in, not the shards in {} "
                                            "(made with the old vocabulary)", o.corpus));
}

class PretrainingTask : public Task {
 public:
  PretrainingTask(const PretrainOptions& o, const TaskContext& ctx)
      : opt_(o), max_predictions_(max_predictions_of(o)), seed_(ctx.seed) {
    if (ctx.checkpoint.empty()) check_init_from_options(o);  // a resumed run needs its own checkpoint only
    if (!ctx.checkpoint.empty()) load_checkpoint(ctx.checkpoint, "resume", ctx);
    else if (!o.init_from.empty()) load_checkpoint(o.init_from, "--init-from", ctx);
    else make_fresh_model(ctx);
    // On resume the checkpoint holds the extended vocabulary already.
    if (ctx.checkpoint.empty() && o.extend_vocab > 0) extend_vocabulary(ctx);
    bind_heads();
    load_data(ctx);
  }

  std::string name() const override {
    if (heads_->detects_replaced_tokens()) return "rtd";
    switch (heads_->sentence_task()) {
      case models::SentenceTask::NextSentence: return "mlm_nsp";
      case models::SentenceTask::SentenceOrder: return "mlm_sop";
      case models::SentenceTask::None: break;
    }
    return "mlm";
  }
  std::string describe() const override {
    return fmt::format("model: {} ({:.1f}M parameters), {}; vocabulary {}; {} training instances per epoch, {} held out; "
                       "sequences of {} tokens",
                       model_->architecture(), double(model_->num_parameters()) / 1e6, text::pairing_name(pairing_),
                       tok_->vocab_size(), source_->epoch_size(pos_.epoch), eval_.size(), opt_.seq_len);
  }
  nn::Module& model() override { return *model_; }
  OptimizerDefaults optimizer_defaults() const override { return pretraining_optimizer_defaults(model_->model_type()); }
  size_t train_examples_per_epoch() override { return source_->epoch_size(0); }
  bool splits_batches() const override { return true; }

  BatchLoss next_batch_loss(size_t batch_size) override {
    if (!memory_checked_) refuse_if_too_big_to_train(config_, batch_size, opt_.seq_len, max_predictions_, opt_.checkpoint_activations);
    memory_checked_ = true;
    // where the batch starts in the stream (this rank's part after the earlier ranks'), before drawing moves it
    const uint64_t sample_seed = sample_seed_of(pos_.epoch), first_sequence = pos_.index + shard_.rank * batch_size;
    Batch b = make_batch(shard_.keep(next_instances(*source_, pos_, shard_.draw(batch_size))), opt_.seq_len, tok_->pad_id());
    b.targets.sample_seed = sample_seed;
    b.targets.first_sequence = first_sequence;
    const auto out = heads_->forward_pretraining(b.inputs, b.targets);
    const double masked = double(b.targets.masked_labels.numel());
    BatchLoss l{out.loss, {{"mlm", out.mlm_loss.item()}}, {{"masked", masked}, {"mlm_correct", double(out.mlm_correct)}},
                b.real_tokens, {{"mlm", out.mlm_loss, masked}}};
    if (out.replaced_loss.defined()) {  // the discriminator's term, weighted as in the loss
      const double tokens = double(out.tokens);
      l.terms.push_back({"rtd", sub(out.loss, out.mlm_loss), tokens});
      l.parts.emplace_back("rtd", out.replaced_loss.item());
      for (const auto& [name, v] : replaced_counts(out)) l.counts[name] = v;
    }
    if (has_sentence_task()) {
      l.terms.push_back({sentence_name(), out.sentence_loss, double(b.inputs.batch())});
      l.parts.emplace_back(sentence_name(), out.sentence_loss.item());
      l.counts["sequences"] = double(b.inputs.batch());
      l.counts["sentence_correct"] = double(out.sentence_correct);
    }
    return l;
  }

  Scalars train_metrics(const Counts& c) const override {
    auto count = [&](const char* name) { return c.count(name) ? c.at(name) : 0.0; };
    Scalars s = {{"mlm_acc", count("mlm_correct") / std::max(count("masked"), 1.0)}};
    if (heads_->detects_replaced_tokens())
      for (const auto& m : replaced_metrics(c)) s.push_back(m);
    if (has_sentence_task()) s.emplace_back(sentence_name() + "_acc", count("sentence_correct") / std::max(count("sequences"), 1.0));
    return s;
  }

  Evaluation evaluate(size_t batch_size) override {
    if (eval_.empty()) return {};
    size_t masked = 0, mlm_correct = 0, sentence_correct = 0;
    double mlm_loss_sum = 0, sentence_loss_sum = 0, replaced_loss_sum = 0;
    Counts replaced;
    for (size_t s = 0; s < eval_.size(); s += batch_size) {
      const std::vector<text::Instance> part(eval_.begin() + long(s), eval_.begin() + long(std::min(eval_.size(), s + batch_size)));
      Batch b = make_batch(part, opt_.seq_len, tok_->pad_id());
      b.targets.sample_seed = sample_seed_of(~uint64_t(0));  // the same draws at every evaluation
      b.targets.first_sequence = s;
      const auto out = heads_->forward_pretraining(b.inputs, b.targets);
      if (out.replaced_loss.defined()) {
        replaced_loss_sum += double(out.replaced_loss.item()) * double(out.tokens);
        for (const auto& [name, v] : replaced_counts(out)) replaced[name] += v;
      }
      const size_t m = b.targets.masked_labels.numel();
      masked += m;
      mlm_correct += out.mlm_correct;
      mlm_loss_sum += double(out.mlm_loss.item()) * double(m);  // the loss is a mean: weigh by its count
      if (has_sentence_task()) {
        sentence_correct += out.sentence_correct;
        sentence_loss_sum += double(out.sentence_loss.item()) * double(part.size());
      }
    }
    const double mlm_acc = double(mlm_correct) / double(std::max<size_t>(masked, 1));
    const double mlm_loss = mlm_loss_sum / double(std::max<size_t>(masked, 1));
    const double baseline = most_frequent_label_share(eval_);
    Evaluation e{{{"mlm_acc", mlm_acc}, {"perplexity", std::exp(mlm_loss)}, {"mlm_loss", mlm_loss}, {"mlm_acc_baseline", baseline}},
                 fmt::format("MLM accuracy {:.2f}% (most frequent token {:.2f}%), perplexity {:.1f}", 100 * mlm_acc,
                             100 * baseline, std::exp(mlm_loss))};
    if (heads_->detects_replaced_tokens()) {
      const Scalars r = replaced_metrics(replaced);
      for (const auto& m : r) e.metrics.push_back(m);
      e.metrics.emplace_back("rtd_loss", replaced_loss_sum / std::max(replaced["tokens"], 1.0));
      const double original_share = 1 - replaced["replaced"] / std::max(replaced["tokens"], 1.0);
      e.metrics.emplace_back("rtd_acc_baseline", original_share);
      e.summary = fmt::format("generator MLM accuracy {:.2f}% (most frequent token {:.2f}%); replaced-token detection "
                              "accuracy {:.2f}% (all 'original' {:.2f}%), precision {:.2f}%, recall {:.2f}% of the {:.1f}% "
                              "replaced", 100 * mlm_acc, 100 * baseline, 100 * r[0].second, 100 * original_share,
                              100 * r[1].second, 100 * r[2].second, 100 * (1 - original_share));
    }
    if (has_sentence_task()) {
      const std::string n = sentence_name();
      const double acc = double(sentence_correct) / double(eval_.size());
      e.metrics.emplace_back(n + "_acc", acc);
      e.metrics.emplace_back(n + "_loss", sentence_loss_sum / double(eval_.size()));
      e.summary = fmt::format("MLM accuracy {:.2f}% (most frequent token {:.2f}%), {} accuracy {:.2f}%, perplexity {:.1f}",
                              100 * mlm_acc, 100 * baseline, n == "nsp" ? "NSP" : "SOP", 100 * acc, std::exp(mlm_loss));
    }
    return e;
  }

  nlohmann::json data_state() const override { return {{"epoch", pos_.epoch}, {"index", pos_.index}}; }
  void restore_data_state(const nlohmann::json& s) override {
    try {
      pos_ = {s.at("epoch").get<uint64_t>(), s.at("index").get<size_t>()};
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("[pretraining] bad data position {}: {}", json_summary(s), e.what()));
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
  bool has_sentence_task() const { return heads_->sentence_task() != models::SentenceTask::None; }

  // What an epoch's random draws (ELECTRA's generator samples, with each sequence's index in the
  // epoch: models::PretrainingTargets) come from.
  uint64_t sample_seed_of(uint64_t epoch) const {
    return (seed_ ^ 0x6a09e667f3bcc909ULL) * 0x9E3779B97F4A7C15ULL + epoch * 0xBF58476D1CE4E5B9ULL;
  }

  static Counts replaced_counts(const models::PretrainingOutput& out) {
    return {{"tokens", double(out.tokens)}, {"tokens_correct", double(out.tokens_correct)},
            {"replaced", double(out.replaced)}, {"predicted_replaced", double(out.predicted_replaced)},
            {"replaced_found", double(out.replaced_found)}};
  }
  // The discriminator's accuracy over real tokens, and its precision and recall of "replaced".
  static Scalars replaced_metrics(const Counts& c) {
    auto count = [&](const char* name) { return c.count(name) ? c.at(name) : 0.0; };
    return {{"rtd_acc", count("tokens_correct") / std::max(count("tokens"), 1.0)},
            {"rtd_precision", count("replaced_found") / std::max(count("predicted_replaced"), 1.0)},
            {"rtd_recall", count("replaced_found") / std::max(count("replaced"), 1.0)}};
  }
  std::string sentence_name() const { return models::sentence_task_name(heads_->sentence_task()); }

  // The model and tokenizer of checkpoint `dir` (`what`: "resume" or "--init-from", in errors).
  void load_checkpoint(const std::string& dir, const std::string& what, const TaskContext& ctx) {
    const nlohmann::json saved = models::read_config_file((fs::path(dir) / "config.json").string(), what);
    if (!saved.is_object()) throw std::invalid_argument(fmt::format("[pretraining] {} {}: config.json is not a JSON object", what, dir));
    const std::string type = models::config_model_type(saved);
    const bool init = what == "--init-from";
    if (init) check_model_matches(saved, type, dir);
    std::string architecture;
    if (saved.contains("architectures") && saved["architectures"].is_array() && !saved["architectures"].empty() &&
        saved["architectures"][0].is_string())
      architecture = saved["architectures"][0];
    pairing_ = checkpoint_pairing(opt_.pairing, type, architecture, ctx.quiet || !init);
    auto loaded = models::load_pretrained(dir, ctx.seed, architecture_for(type, pairing_));
    if (init && !ctx.quiet && !loaded.newly_initialised.empty())
      fmt::print("newly initialised (not in {}): {}\n", dir, fmt::join(loaded.newly_initialised, ", "));
    model_ = std::move(loaded.model);
    tok_ = make_tokenizer(opt_, type, ctx, dir);
    config_ = model_->config_json();
    if (init) check_positions(dir);
  }

  void make_fresh_model(const TaskContext& ctx) {
    const std::string model = opt_.model_or_default(), model_type = models::spec_model_type(model);
    tok_ = make_tokenizer(opt_, model_type, ctx, "", &vocabulary_trained_);
    check_tokenizer_family(*tok_, model_type, model, opt_.allow_tokenizer_mismatch);
    pairing_ = resolve_pairing(opt_.pairing, model_type);
    config_ = models::fresh_model_config(model, tok_->vocab_size(), tok_->pad_id(), tok_->cls_id(), tok_->sep_id(), opt_.seq_len);
    refuse_if_too_big_to_train(config_, 0, opt_.seq_len, max_predictions_, opt_.checkpoint_activations);
    model_ = models::build_model(config_, model, architecture_for(model_type, pairing_));
    Generator init_gen(ctx.seed);
    model_->init_weights(init_gen);
  }

  // --init-from: the checkpoint's config shapes the model; a --model given anyway must agree with it.
  void check_model_matches(const nlohmann::json& saved, const std::string& type, const std::string& dir) const {
    if (opt_.model.empty()) return;
    const nlohmann::json wanted = models::spec_config(opt_.model);
    auto refuse = [&](const std::string& field, const nlohmann::json& a, const nlohmann::json& b) {
      throw std::invalid_argument(fmt::format("[pretraining] --model {} conflicts with --init-from {}: {} {} vs the checkpoint's {} "
                                              "(leave --model out: the checkpoint's config.json shapes the model)",
                                              opt_.model, dir, field, a.dump(), b.dump()));
    };
    if (wanted["model_type"] != type) refuse("model_type", wanted["model_type"], type);
    for (const char* field : {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "embedding_size",
                              "num_hidden_groups", "inner_group_num"})
      if (wanted.contains(field) && saved.contains(field) && wanted[field] != saved[field]) refuse(field, wanted[field], saved[field]);
  }

  // The checkpoint's position table must hold --seq-len tokens (past pad_token_id for a family
  // whose positions follow padding).
  void check_positions(const std::string& dir) const {
    const size_t have = config_.value("max_position_embeddings", size_t(0));
    const size_t offset = models::first_position(config_);
    if (opt_.seq_len + offset > have)
      throw std::invalid_argument(fmt::format("[pretraining] --max-seq-length {} needs {} positions; the model of --init-from {} has {} "
                                              "(max_position_embeddings)", opt_.seq_len, opt_.seq_len + offset, dir, have));
  }

  // --extend-vocab: the training documents' most frequent split words become tokens (WordPiece only).
  void extend_vocabulary(const TaskContext& ctx) {
    auto* wordpiece = dynamic_cast<text::BertTokenizer*>(tok_.get());
    if (!wordpiece)
      throw std::invalid_argument(fmt::format(
          "[pretraining] --extend-vocab supports WordPiece vocabularies (BERT's); the checkpoint's tokenizer is a {}: a "
          "byte-level BPE token is only produced through a chain of merges (each intermediate a token, which changes how "
          "other words split), and a SentencePiece piece needs a score in the unigram model", tok_->tokenizer_class()));
    std::vector<text::Document> docs = text::load_documents(opt_.corpus, *tok_);
    text::take_documents(docs, held_out_documents(docs.size(), opt_));  // the held-out documents choose nothing
    const auto words = text::frequent_split_words(docs, *tok_, {opt_.extend_vocab, opt_.extend_min_count, opt_.extend_min_pieces});
    std::vector<std::string> texts;
    std::vector<std::vector<int32_t>> pieces;
    for (const auto& w : words) {
      texts.push_back(text::wordpiece_word(*tok_, w.pieces));
      pieces.push_back(w.pieces);
    }
    const size_t old_size = tok_->vocab_size();
    wordpiece->append_tokens(texts);
    model_ = models::with_new_tokens(*model_, pieces);
    config_ = model_->config_json();
    if (ctx.quiet) return;
    std::vector<std::string> shown;
    for (size_t i = 0; i < std::min<size_t>(words.size(), 12); ++i)
      shown.push_back(fmt::format("{} ({}x, {} pieces)", texts[i], words[i].count, words[i].pieces.size()));
    fmt::print("--extend-vocab: {} new tokens (ids {} to {}; asked for {}, of >= {} pieces and >= {} occurrences): {}{}\n",
               words.size(), old_size, tok_->vocab_size() - 1, opt_.extend_vocab, opt_.extend_min_pieces,
               opt_.extend_min_count, fmt::join(shown, ", "), words.size() > shown.size() ? ", ..." : "");
  }

  void bind_heads() {
    heads_ = dynamic_cast<models::PretrainingHeads*>(model_.get());
    if (!heads_) throw std::invalid_argument(fmt::format("[pretraining] {} has no pre-training heads", model_->architecture()));
    if (heads_->sentence_task() != sentence_task_of(pairing_))
      throw std::invalid_argument(fmt::format("[pretraining] {} trains {}, not --pairing {}", model_->architecture(),
                                              models::sentence_task_name(heads_->sentence_task()), text::pairing_name(pairing_)));
    heads_->check_can_pretrain();
    heads_->set_checkpoint_activations(opt_.checkpoint_activations);
    const size_t model_vocab = config_.value("vocab_size", size_t(0));
    if (model_vocab != tok_->vocab_size())
      throw std::invalid_argument(fmt::format("[pretraining] the model's vocab_size {} differs from the tokenizer's {} tokens",
                                              model_vocab, tok_->vocab_size()));
  }

  void load_data(const TaskContext& ctx) {
    text::PretrainingOptions popt;
    popt.pairing = pairing_;
    popt.max_seq_length = opt_.seq_len;
    popt.max_predictions_per_seq = max_predictions_;
    popt.masked_lm_prob = opt_.masked_lm_prob;
    popt.whole_word_mask = opt_.whole_word_mask;
    const models::PretrainingRecipe recipe = models::family_entry(model_->model_type()).recipe;
    popt.max_ngram = opt_.max_ngram > 0 ? opt_.max_ngram : recipe.max_ngram;
    popt.mask_token_rate = recipe.mask_token_rate;
    popt.random_token_rate = recipe.random_token_rate;
    popt.seed = ctx.seed;
    popt.dupe_factor = 1;
    popt.validate();
    if (fs::is_directory(opt_.corpus)) {
      auto s = std::make_unique<ShardSource>(opt_.corpus, opt_.eval_instances, eval_);
      if (!s->held_out_documents() && opt_.eval_instances > 0 && !ctx.quiet)
        fmt::print("note: {} has no {} (shards made before create_pretraining_data held documents out, or with "
                   "--eval-min-documents 0): the held-out set is its last {} records, whose documents training reads "
                   "too, so evaluation overstates what the model learnt; make the shards again (into a new directory) "
                   "to evaluate on unseen documents\n",
                   opt_.corpus, text::kHeldOutShard, eval_.size());
      if (s->max_seq_length() > opt_.seq_len)
        throw std::invalid_argument(fmt::format("[pretraining] the shards hold sequences up to {} tokens; --max-seq-length is {}",
                                                s->max_seq_length(), opt_.seq_len));
      if (s->vocab_size() != tok_->vocab_size())
        throw std::invalid_argument(fmt::format("[pretraining] the shards in {} were made with a vocabulary of {} tokens; the "
                                                "tokenizer has {}", opt_.corpus, s->vocab_size(), tok_->vocab_size()));
      check_shard_recipe(opt_.corpus, s->recipe(), pairing_, model_->model_type(), *tok_,
                         !ctx.checkpoint.empty() ? ctx.checkpoint : opt_.init_from, !ctx.checkpoint.empty(), ctx.quiet);
      check_shard_masking(opt_.corpus, s->recipe(), opt_, ctx.quiet);
      source_ = std::move(s);
      return;
    }
    Progress p("reading corpus", 0, "lines");
    size_t text_documents = 0;
    auto docs = text::load_documents(
        opt_.corpus, *tok_, [&](size_t done, size_t) {
          if (!ctx.quiet) p.update(done);
        },
        &text_documents);
    if (!ctx.quiet) p.finish(fmt::format("{} documents", docs.size()));
    // A vocabulary trained here left out the held-out documents counted before tokenising; with
    // documents that tokenise to nothing, the count differs and so may the documents picked.
    if (!ctx.quiet && vocabulary_trained_ && text_documents != docs.size() &&
        !held_out_documents(text_documents, opt_).empty())
      fmt::print("note: {} of the corpus's {} documents tokenise to nothing; the vocabulary's held-out documents were "
                 "picked among all {}, so they may not be the ones evaluated\n",
                 text_documents - docs.size(), text_documents, text_documents);
    const text::MaskingVocab masking = text::MaskingVocab::from(*tok_);
    eval_ = text::take_held_out_instances(docs, held_out_documents(docs.size(), opt_), popt, masking);
    if (eval_.size() > opt_.eval_instances) eval_.resize(opt_.eval_instances);
    source_ = std::make_unique<DynamicSource>(std::move(docs), popt, masking);
  }

  const PretrainOptions opt_;
  const size_t max_predictions_;
  const uint64_t seed_;
  bool vocabulary_trained_ = false;  // on the corpus, by this run
  text::Pairing pairing_ = text::Pairing::NextSentence;
  std::unique_ptr<text::Tokenizer> tok_;
  nlohmann::json config_;
  std::unique_ptr<models::PretrainedModel> model_;
  models::PretrainingHeads* heads_ = nullptr;
  std::unique_ptr<InstanceSource> source_;
  std::vector<text::Instance> eval_;
  DataPosition pos_;
  bool memory_checked_ = false;
};

}  // namespace

std::vector<size_t> held_out_documents(size_t documents, const PretrainOptions& o) {
  if (o.eval_instances == 0) return {};
  return text::held_out_documents(documents, o.eval_min_documents, o.eval_documents_at == "end");
}

std::unique_ptr<Task> make_pretraining_task(const PretrainOptions& options, const TaskContext& ctx) {
  return std::make_unique<PretrainingTask>(options, ctx);
}

namespace {
// --init-from a checkpoint of ours that trained on this very corpus: another held-out split would
// score documents it trained on, so the split its run saved (or, written before the split's
// options, the older one) is kept, unless this run sets one. A checkpoint without
// training_state.json (Hugging Face's) or trained on other data leaves the options alone; one whose
// file cannot be read is refused.
void keep_init_from_split(PretrainOptions& o, bool quiet) {
  const PretrainOptions fresh;
  const bool set = o.eval_min_documents != fresh.eval_min_documents || o.eval_documents_at != fresh.eval_documents_at ||
                   o.flags_given.count("--eval-min-documents") || o.flags_given.count("--eval-documents-at");
  const fs::path state = fs::path(o.init_from) / "training_state.json";
  if (o.init_from.empty() || set || !fs::is_regular_file(o.corpus) || !fs::exists(state)) return;
  PretrainOptions split;  // the checkpoint's two options alone (a key it lacks: the older split)
  try {
    std::ifstream in(state, std::ios::binary);
    const nlohmann::json saved = parse_json_bounded(in).at("options");
    // the corpus's fingerprint, under its option's key (format 2 and older: "corpus")
    const std::string fingerprint = option_detail::saved_key(saved, "--train-file", {"--corpus"}) + "_fingerprint";
    if (!saved.contains(fingerprint) || saved[fingerprint] != data_fingerprint(o.corpus)) return;
    if (saved.value("eval_instances", nlohmann::json(1)) == 0) return;  // it held nothing out
    nlohmann::json keys = nlohmann::json::object();
    for (const char* key : {"eval_min_documents", "eval_documents_at"})
      if (saved.contains(key)) keys[key] = saved[key];
    PretrainOptions::table().restore(split, keys, state.string());
  } catch (const std::exception& e) {  // it would have been evaluated on documents it trained on
    throw std::invalid_argument(fmt::format("[pretraining] --init-from {}: cannot read which documents its run held out: {}",
                                            o.init_from, e.what()));
  }
  o.eval_min_documents = split.eval_min_documents;
  o.eval_documents_at = split.eval_documents_at;
  if (!quiet && Communicator::world().rank() == 0 &&
      (o.eval_min_documents != fresh.eval_min_documents || o.eval_documents_at != fresh.eval_documents_at))
    fmt::print("--init-from {} trained on this corpus: holding out the documents it held out (--eval-min-documents {} "
               "--eval-documents-at {})\n", o.init_from, o.eval_min_documents, o.eval_documents_at);
}
}  // namespace

size_t shard_sequence_length(const std::string& corpus) {
  if (!fs::is_directory(corpus)) return 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(corpus, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("shard_", 0) == 0 && entry.path().extension() == ".bin")
      return text::ShardReader(entry.path().string()).max_seq_length();
  }
  return 0;
}

HeldOutEvaluation evaluate_pretraining(const TrainerOptions& trainer, PretrainOptions task) {
  // every rank would evaluate the same checkpoint and print the same figures
  if (Communicator::world().distributed())
    throw std::invalid_argument("[pretraining] --eval-only runs in one process: start it without mpirun");
  if (task.init_from.empty() || !trainer.resume.empty())
    throw std::invalid_argument("[pretraining] --eval-only evaluates the checkpoint --init-from names: pass it (not --resume-from-checkpoint)");
  TrainerOptions::table().check(trainer);
  PretrainOptions::table().check(task);
  if (task.eval_instances == 0) throw std::invalid_argument("[pretraining] --eval-only with --eval-instances 0: nothing to evaluate");
  keep_init_from_split(task, trainer.quiet);
  if (trainer.threads > 0) set_num_threads(trainer.threads);
  MatmulPrecisionGuard precision(training_precision(trainer));
  auto t = make_pretraining_task(task, {"", "", trainer.seed, trainer.quiet});
  NoGradGuard no_grad;
  t->model().eval();
  return {t->describe(), t->evaluate(trainer.batch)};
}

RunResult run_pretraining(TrainerOptions trainer, PretrainOptions task) {
  if (trainer.resume.empty()) keep_init_from_split(task, trainer.quiet);  // a resumed run restores its own
  Trainer t(std::move(trainer), BoundOptions(PretrainOptions::table(), task),
            [&task](const TaskContext& ctx) { return make_pretraining_task(task, ctx); });
  return t.run();
}

}  // namespace xg::training
