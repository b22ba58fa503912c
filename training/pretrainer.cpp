#include "training/pretrainer.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "models/checkpoint.hpp"
#include "nn/atomic_file.hpp"
#include "optim/optim.hpp"
#include "text/load_tokenizer.hpp"
#include "text/wordpiece_trainer.hpp"
#include "training/batch.hpp"
#include "util/progress.hpp"

namespace fs = std::filesystem;

namespace xg::training {

namespace {

std::atomic<bool> g_interrupted{false};
void on_sigint(int) { g_interrupted = true; }

// Instances in a fixed order, addressed by (epoch, index): dynamic masking over documents, or
// static shards read in order.
class InstanceSource {
 public:
  virtual ~InstanceSource() = default;
  virtual size_t epoch_size(uint64_t epoch) = 0;
  virtual text::Instance get(uint64_t epoch, size_t index) = 0;
};

class DynamicSource : public InstanceSource {
 public:
  DynamicSource(std::vector<text::Document> docs, const text::PretrainingOptions& o, text::MaskingVocab v)
      : ds_(std::move(docs), o, std::move(v)) {}
  size_t epoch_size(uint64_t e) override { return ds_.epoch_size(e); }
  text::Instance get(uint64_t e, size_t i) override { return ds_.get(e, i); }

 private:
  text::DynamicDataset ds_;
};

class ShardSource : public InstanceSource {
 public:
  // The last `held_out` records are kept for evaluation.
  ShardSource(const std::vector<std::string>& paths, size_t held_out, std::vector<text::Instance>& eval) {
    for (const auto& p : paths) readers_.push_back(std::make_unique<text::ShardReader>(p));
    for (size_t r = 0; r < readers_.size(); ++r)
      for (size_t i = 0; i < readers_[r]->size(); ++i) index_.emplace_back(r, i);
    if (index_.size() <= held_out) throw std::runtime_error(fmt::format("[bert_pretrain] the shards hold {} instances, not more than the {} held out for evaluation", index_.size(), held_out));
    for (size_t k = index_.size() - held_out; k < index_.size(); ++k) eval.push_back(read(k));
    index_.resize(index_.size() - held_out);
  }
  size_t epoch_size(uint64_t) override { return index_.size(); }
  text::Instance get(uint64_t, size_t i) override { return read(i); }
  size_t max_seq_length() const { return readers_.front()->max_seq_length(); }

 private:
  text::Instance read(size_t k) { return readers_[index_[k].first]->get(index_[k].second); }
  std::vector<std::unique_ptr<text::ShardReader>> readers_;
  std::vector<std::pair<size_t, size_t>> index_;
};

struct Position {
  uint64_t epoch = 0;
  size_t index = 0;
};

std::vector<text::Instance> next_instances(InstanceSource& src, Position& pos, size_t n) {
  std::vector<text::Instance> out;
  while (out.size() < n) {
    if (pos.index >= src.epoch_size(pos.epoch)) {
      ++pos.epoch;
      pos.index = 0;
      if (src.epoch_size(pos.epoch) == 0) throw std::runtime_error("[bert_pretrain] the training data yields no instances");
      continue;
    }
    out.push_back(src.get(pos.epoch, pos.index++));
  }
  return out;
}

std::string checkpoint_name(int64_t step) { return fmt::format("checkpoint-{:06d}", step); }

// The checkpoint-NNNNNN directories of an --out directory, oldest first (the zero-padded step
// sorts by name); the .tmp/.old directories of an unfinished save are not among them.
std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::string> all;
  if (fs::is_directory(dir))
    for (auto& e : fs::directory_iterator(dir)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("checkpoint-", 0) == 0 && n.find('.') == std::string::npos) all.push_back(e.path().string());
    }
  std::sort(all.begin(), all.end());
  return all;
}

// A checkpoint directory, or the newest checkpoint-* inside an --out directory.
std::string resolve_checkpoint(const std::string& path) {
  if (fs::exists(fs::path(path) / "training_state.json")) return path;
  const auto all = list_checkpoints(path);
  for (auto it = all.rbegin(); it != all.rend(); ++it)
    if (fs::exists(fs::path(*it) / "training_state.json")) return *it;
  throw std::runtime_error(fmt::format("[bert_pretrain] --resume {}: no checkpoint with training_state.json there", path));
}

nlohmann::json options_json(const PretrainOptions& o) {
  return {{"corpus", o.corpus}, {"vocab", o.vocab}, {"train_vocab", o.train_vocab}, {"cased", o.cased},
          {"max_predictions", o.max_predictions}, {"masked_lm_prob", o.masked_lm_prob}, {"whole_word_mask", o.whole_word_mask},
          {"eval_instances", o.eval_instances}, {"model", o.model}, {"seq_len", o.seq_len}, {"batch", o.batch},
          {"grad_accum", o.grad_accum}, {"lr", o.lr}, {"warmup", o.warmup}, {"steps", o.steps}, {"schedule", o.schedule},
          {"optimizer", o.optimizer}, {"weight_decay", o.weight_decay}, {"clip", o.clip}, {"seed", o.seed}};
}

// What a resumed run takes from the checkpoint: everything that shapes the data and the updates.
void restore_options(PretrainOptions& o, const nlohmann::json& j) {
  o.corpus = j.at("corpus");
  o.cased = j.at("cased");
  o.max_predictions = j.at("max_predictions");
  o.masked_lm_prob = j.at("masked_lm_prob");
  o.whole_word_mask = j.at("whole_word_mask");
  o.eval_instances = j.at("eval_instances");
  o.seq_len = j.at("seq_len");
  o.batch = j.at("batch");
  o.grad_accum = j.at("grad_accum");
  o.lr = j.at("lr");
  o.warmup = j.at("warmup");
  o.schedule = j.at("schedule");
  o.optimizer = j.at("optimizer");
  o.weight_decay = j.at("weight_decay");
  o.clip = j.at("clip");
  o.seed = j.at("seed");
}

struct EvalResult {
  double mlm_acc = 0, nsp_acc = 0, mlm_loss = 0, nsp_loss = 0;
};

EvalResult evaluate(models::BertForPreTraining& model, const std::vector<text::Instance>& eval, size_t batch,
                    size_t seq_len, int32_t pad_id) {
  EvalResult r;
  if (eval.empty()) return r;
  NoGradGuard no_grad;
  model.eval();
  size_t masked = 0, mlm_correct = 0, nsp_correct = 0;
  double mlm_loss_sum = 0, nsp_loss_sum = 0;
  for (size_t s = 0; s < eval.size(); s += batch) {
    const std::vector<text::Instance> part(eval.begin() + long(s), eval.begin() + long(std::min(eval.size(), s + batch)));
    const Batch b = make_batch(part, seq_len, pad_id);
    const auto out = model.forward(b.inputs, b.targets);
    const size_t m = b.targets.masked_labels.size();
    masked += m;
    mlm_correct += out.mlm_correct;
    nsp_correct += out.nsp_correct;
    mlm_loss_sum += double(out.mlm_loss.item()) * double(m);
    nsp_loss_sum += double(out.nsp_loss.item()) * double(part.size());
  }
  model.train();
  r.mlm_acc = double(mlm_correct) / double(std::max<size_t>(masked, 1));
  r.nsp_acc = double(nsp_correct) / double(eval.size());
  r.mlm_loss = mlm_loss_sum / double(std::max<size_t>(masked, 1));
  r.nsp_loss = nsp_loss_sum / double(eval.size());
  return r;
}

models::BertConfig config_for(const std::string& model, size_t vocab_size, size_t seq_len) {
  models::BertConfig c = fs::exists(model) ? models::BertConfig::from_file(model) : models::BertConfig::preset(model);
  c.vocab_size = vocab_size;
  c.max_position_embeddings = std::max(c.max_position_embeddings, seq_len);
  c.validate();
  return c;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, models::BertForPreTraining& m, float lr, float wd) {
  auto groups = optim::bert_param_groups(m.named_parameters(), wd);
  if (name == "adamw") return std::make_unique<optim::AdamW>(groups, lr);
  if (name == "lamb") return std::make_unique<optim::Lamb>(groups, lr);
  throw std::invalid_argument(fmt::format("[bert_pretrain] --optimizer {}: use adamw or lamb", name));
}

}  // namespace

double peak_rss_mb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

int64_t run_pretraining(const PretrainOptions& opt_in) {
  PretrainOptions opt = opt_in;
  if (opt.threads > 0) set_num_threads(opt.threads);
  auto say = [&](const std::string& s) {
    if (opt.quiet) return;
    fmt::print("{}\n", s);
    std::fflush(stdout);  // logs redirected to a file show progress as it happens
  };

  // ---- resume: the checkpoint decides everything that shapes data and updates ----
  std::string ckpt;
  nlohmann::json state;
  if (!opt.resume.empty()) {
    ckpt = resolve_checkpoint(opt.resume);
    std::ifstream in(fs::path(ckpt) / "training_state.json");
    try {
      state = nlohmann::json::parse(in);
      restore_options(opt, state.at("options"));
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("[bert_pretrain] {}/training_state.json: {}", ckpt, e.what()));
    }
    // the checkpoint's tokenizer; checkpoints from before tokenizer files carry vocab.txt only
    const bool has_tokenizer_files = fs::exists(fs::path(ckpt) / "tokenizer_config.json");
    opt.vocab = has_tokenizer_files ? ckpt : (fs::path(ckpt) / "vocab.txt").string();
    opt.train_vocab = 0;
    say(fmt::format("resuming from {} (step {})", ckpt, state.at("step").get<int64_t>()));
  }
  if (opt.batch == 0 || opt.grad_accum == 0 || opt.seq_len < 8)
    throw std::invalid_argument(fmt::format("[bert_pretrain] --batch {} and --grad-accum {} must be positive and --seq-len {} >= 8",
                                            opt.batch, opt.grad_accum, opt.seq_len));
  fs::create_directories(opt.out);

  // ---- vocabulary and tokenizer ----
  const bool shards = fs::is_directory(opt.corpus);
  if (opt.train_vocab > 0) {
    if (shards) throw std::invalid_argument("[bert_pretrain] --train-vocab needs a text corpus, not shards");
    text::WordPieceTrainerOptions to;
    to.vocab_size = opt.train_vocab;
    to.normalization.lowercase = !opt.cased;
    Progress p("training vocabulary", 0, "merges");
    const text::Vocab v = text::train_wordpiece({opt.corpus}, to, [&](size_t done, size_t) {
      if (!opt.quiet) p.update(done);
    });
    if (!opt.quiet) p.finish(fmt::format("{} tokens", v.size()));
    opt.vocab = (fs::path(opt.out) / "vocab.txt").string();
    v.save(opt.vocab);
  }
  text::TokenizerOptions topt;
  topt.lowercase = !opt.cased;
  const std::unique_ptr<text::Tokenizer> tokenizer = text::open_tokenizer(opt.vocab, topt);
  const text::Tokenizer& tok = *tokenizer;

  // ---- data ----
  text::PretrainingOptions popt;
  popt.max_seq_length = opt.seq_len;
  popt.max_predictions_per_seq = opt.max_predictions;
  popt.masked_lm_prob = opt.masked_lm_prob;
  popt.whole_word_mask = opt.whole_word_mask;
  popt.seed = opt.seed;
  popt.dupe_factor = 1;
  popt.validate();
  std::unique_ptr<InstanceSource> source;
  std::vector<text::Instance> eval;
  if (shards) {
    std::vector<std::string> paths;
    for (auto& e : fs::directory_iterator(opt.corpus))
      if (e.path().extension() == ".bin") paths.push_back(e.path().string());
    std::sort(paths.begin(), paths.end());
    if (paths.empty()) throw std::runtime_error(fmt::format("[bert_pretrain] {}: no shard_*.bin files", opt.corpus));
    auto s = std::make_unique<ShardSource>(paths, opt.eval_instances, eval);
    if (s->max_seq_length() > opt.seq_len)
      throw std::invalid_argument(fmt::format("[bert_pretrain] the shards hold sequences up to {} tokens; --seq-len is {}", s->max_seq_length(), opt.seq_len));
    source = std::move(s);
  } else {
    Progress p("reading corpus", 0, "lines");
    auto docs = text::load_documents(opt.corpus, tok, [&](size_t done, size_t) {
      if (!opt.quiet) p.update(done);
    });
    if (!opt.quiet) p.finish(fmt::format("{} documents", docs.size()));
    // Hold out the last 2% of documents (at least one) for evaluation.
    if (docs.size() >= 2 && opt.eval_instances > 0) {
      const size_t held = std::max<size_t>(1, docs.size() / 50);
      std::vector<text::Document> eval_docs(docs.end() - long(held), docs.end());
      docs.resize(docs.size() - held);
      text::PretrainingOptions eopt = popt;
      eopt.seed = opt.seed + 1;
      eval = text::create_static_instances(eval_docs, eopt, text::MaskingVocab::from(tok));
      if (eval.size() > opt.eval_instances) eval.resize(opt.eval_instances);
    }
    source = std::make_unique<DynamicSource>(std::move(docs), popt, text::MaskingVocab::from(tok));
  }
  const size_t per_step = opt.batch * opt.grad_accum;
  if (opt.epochs > 0) opt.steps = int64_t((opt.epochs * source->epoch_size(0) + per_step - 1) / per_step);
  if (opt.steps <= 0) throw std::invalid_argument(fmt::format("[bert_pretrain] --steps {} must be positive", opt.steps));
  if (opt.warmup < 0) opt.warmup = opt.steps / 10;

  // ---- model, optimizer, schedule ----
  std::unique_ptr<models::BertForPreTraining> model;
  if (!ckpt.empty()) {
    model = std::move(models::load_pretrained(ckpt).model);
  } else {
    model = std::make_unique<models::BertForPreTraining>(config_for(opt.model, tok.vocab_size(), opt.seq_len));
    Generator init_gen(opt.seed);
    model->init_weights(init_gen);
  }
  if (model->config.vocab_size != tok.vocab_size())
    throw std::invalid_argument(fmt::format("[bert_pretrain] the model's vocab_size {} differs from the vocabulary's {} tokens",
                                            model->config.vocab_size, tok.vocab_size()));
  model->train();
  auto optimizer = make_optimizer(opt.optimizer, *model, opt.lr, opt.weight_decay);
  const optim::LrSchedule::Kind kind = optim::LrSchedule::kind_from_name(opt.schedule);
  optim::LrSchedule schedule{kind, opt.lr, opt.warmup, opt.steps, 0.f, 1.f};
  schedule.validate();

  Position pos;
  int64_t step = 0;
  if (!ckpt.empty()) {
    optimizer->load_state((fs::path(ckpt) / "optimizer").string());
    step = state.at("step");
    pos.epoch = state.at("data_epoch");
    pos.index = state.at("data_index");
    const auto& g = state.at("rng");
    Generator::State st{{g.at("s")[0], g.at("s")[1], g.at("s")[2], g.at("s")[3]}, g.at("has_spare"), g.at("spare")};
    default_generator().set_state(st);
  } else {
    manual_seed(opt.seed);  // dropout draws from the default generator
  }
  if (step >= opt.steps) {
    say(fmt::format("already at step {} of {}; nothing to do", step, opt.steps));
    return step;
  }
  say(fmt::format("model: {} layers, hidden {}, {} heads, {:.1f}M parameters; vocabulary {}; {} training instances per epoch, "
                  "{} held out; {} steps of {} x {} sequences x {} tokens; {} threads",
                  model->config.num_hidden_layers, model->config.hidden_size, model->config.num_attention_heads,
                  double(model->num_parameters()) / 1e6, tok.vocab_size(), source->epoch_size(pos.epoch), eval.size(),
                  opt.steps, opt.batch, opt.grad_accum, opt.seq_len, num_threads()));

  // ---- checkpointing and metrics ----
  auto save = [&](int64_t at_step) {
    const std::string dir = (fs::path(opt.out) / checkpoint_name(at_step)).string();
    models::save_pretrained(*model, dir, [&](const std::string& tmp) {
      tok.save_pretrained(tmp);
      optimizer->save_state((fs::path(tmp) / "optimizer").string());
      const auto st = default_generator().state();
      const nlohmann::json j = {{"step", at_step},
                                {"data_epoch", pos.epoch},
                                {"data_index", pos.index},
                                {"rng", {{"s", {st.s[0], st.s[1], st.s[2], st.s[3]}}, {"has_spare", st.has_spare}, {"spare", st.spare}}},
                                {"schedule", schedule.to_json()},
                                {"options", options_json(opt)}};
      nn::write_text_atomically((fs::path(tmp) / "training_state.json").string(), j.dump(2) + "\n");
    });
    // keep the newest keep_checkpoints
    const auto all = list_checkpoints(opt.out);
    for (size_t i = 0; i + std::max<size_t>(opt.keep_checkpoints, 1) < all.size(); ++i) fs::remove_all(all[i]);
    return dir;
  };
  std::ofstream metrics(fs::path(opt.out) / "metrics.jsonl", std::ios::app);
  auto record = [&](const nlohmann::json& j) { metrics << j.dump() << "\n" << std::flush; };

  // ---- the loop ----
  g_interrupted = false;
  auto previous_handler = std::signal(SIGINT, on_sigint);
  Progress progress("step", size_t(opt.steps), "steps");
  const bool tty = ::isatty(::fileno(stderr)) != 0 && !opt.quiet;
  const int64_t first_step = step;
  double window_loss = 0, window_mlm = 0, window_nsp = 0, window_tokens = 0;
  size_t window_masked = 0, window_mlm_correct = 0, window_nsp_correct = 0, window_seqs = 0, window_steps = 0;
  auto window_start = std::chrono::steady_clock::now();
  std::string last_dir;
  while (step < opt.steps) {
    optimizer->zero_grad();
    for (size_t micro = 0; micro < opt.grad_accum; ++micro) {
      const Batch b = make_batch(next_instances(*source, pos, opt.batch), opt.seq_len, tok.pad_id());
      const auto out = model->forward(b.inputs, b.targets);
      mul(out.loss, Tensor::scalar(1.f / float(opt.grad_accum))).backward();
      window_loss += out.loss.item() / double(opt.grad_accum);
      window_mlm += out.mlm_loss.item() / double(opt.grad_accum);
      window_nsp += out.nsp_loss.item() / double(opt.grad_accum);
      window_tokens += double(b.real_tokens);
      window_masked += b.targets.masked_labels.size();
      window_mlm_correct += out.mlm_correct;
      window_nsp_correct += out.nsp_correct;
      window_seqs += b.inputs.batch;
    }
    if (opt.clip > 0) optim::clip_grad_norm(model->parameters(), opt.clip);
    const float lr = schedule.at(step);
    optimizer->set_lr(lr);
    optimizer->step();
    ++step;
    ++window_steps;

    const double window_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - window_start).count();
    const double tps = window_tokens / std::max(window_s, 1e-9);
    const std::string status = fmt::format("loss {:.4f} (mlm {:.4f}, nsp {:.4f})  lr {:.2e}  {:.0f} tokens/s",
                                           window_loss / double(window_steps), window_mlm / double(window_steps),
                                           window_nsp / double(window_steps), lr, tps);
    if (tty) progress.update(size_t(step), status);
    const bool log_now = step % std::max<int64_t>(opt.log_every, 1) == 0 || step == opt.steps;
    if (log_now) {
      const double elapsed = progress.elapsed_s();
      const double eta = elapsed / double(step - first_step) * double(opt.steps - step);
      if (!tty)
        say(fmt::format("step {}/{}  {}  elapsed {}  ETA {}", step, opt.steps, status, Progress::format_duration(elapsed),
                        Progress::format_duration(eta)));
      record({{"step", step}, {"loss", window_loss / double(window_steps)}, {"mlm_loss", window_mlm / double(window_steps)},
              {"nsp_loss", window_nsp / double(window_steps)}, {"mlm_acc", double(window_mlm_correct) / double(std::max<size_t>(window_masked, 1))},
              {"nsp_acc", double(window_nsp_correct) / double(std::max<size_t>(window_seqs, 1))}, {"lr", lr},
              {"tokens_per_s", tps}, {"elapsed_s", elapsed}});
      window_loss = window_mlm = window_nsp = window_tokens = 0;
      window_masked = window_mlm_correct = window_nsp_correct = window_seqs = window_steps = 0;
      window_start = std::chrono::steady_clock::now();
    }
    if (opt.eval_every > 0 && (step % opt.eval_every == 0 || step == opt.steps) && !eval.empty()) {
      const EvalResult r = evaluate(*model, eval, opt.batch, opt.seq_len, tok.pad_id());
      const std::string line = fmt::format("eval at step {}: MLM accuracy {:.2f}%, NSP accuracy {:.2f}%, perplexity {:.1f}",
                                           step, 100 * r.mlm_acc, 100 * r.nsp_acc, std::exp(r.mlm_loss));
      if (tty) fmt::print(stderr, "\r\033[K");
      say(line);
      record({{"step", step}, {"eval_mlm_acc", r.mlm_acc}, {"eval_nsp_acc", r.nsp_acc},
              {"eval_perplexity", std::exp(r.mlm_loss)}, {"eval_mlm_loss", r.mlm_loss}, {"eval_nsp_loss", r.nsp_loss}});
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

BenchmarkResult run_benchmark(const PretrainOptions& opt) {
  if (opt.threads > 0) set_num_threads(opt.threads);
  const size_t vocab = 30522;
  models::BertForPreTraining model(config_for(opt.model, vocab, opt.seq_len));
  Generator gen(opt.seed);
  model.init_weights(gen);
  model.train();
  optim::AdamW adamw(optim::bert_param_groups(model.named_parameters(), opt.weight_decay), opt.lr);
  std::vector<Batch> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(random_batch(opt.batch, opt.seq_len, vocab, gen));
  auto step = [&](size_t i) {
    adamw.zero_grad();
    const auto out = model.forward(batches[i % batches.size()].inputs, batches[i % batches.size()].targets);
    out.loss.backward();
    adamw.step();
  };
  step(0);
  step(1);
  const int64_t n = std::max<int64_t>(opt.steps, 1);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) step(size_t(i));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {double(n) * double(opt.batch * opt.seq_len) / secs, secs / double(n), peak_rss_mb(), model.num_parameters()};
}

}  // namespace xg::training
