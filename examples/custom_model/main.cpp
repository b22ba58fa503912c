// A user-defined model written against the nn API: a small Transformer that classifies review
// sentences (data/sentiment_uci.tsv) as positive or negative, trained with AdamW and BERT's
// warm-up + linear-decay schedule. docs/cpp_api.md ("Writing a model") walks through it.
//   custom_model [--data FILE] [--epochs N] [--batch N] [--lr LR] [--seed S]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

#include "nn/nn.hpp"
#include "optim/optim.hpp"
#include "util/bundled_data.hpp"
#include "util/cli.hpp"

using namespace xg;

namespace {

struct Options {
  std::string data = "data/sentiment_uci.tsv";
  size_t epochs = 6;
  size_t batch = 32;
  float lr = 1e-3f;
  float weight_decay = 0.01f;
  float warmup_fraction = 0.1f;
  size_t max_len = 48;
  size_t min_word_count = 2;
  float test_fraction = 0.2f;
  uint64_t seed = 0;
  std::string save;  // "": a temporary file, removed after the reload check
};

struct Example {
  std::vector<int64_t> ids;  // [CLS] w1 w2 ... (no padding)
  int64_t label;
};

// Lower-cased runs of letters, digits and apostrophes.
std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> out;
  std::string w;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '\'') {
      w += char(std::tolower(c));
    } else if (!w.empty()) {
      out.push_back(w);
      w.clear();
    }
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

struct Vocab {
  static constexpr int64_t kPad = 0, kUnk = 1, kCls = 2;
  std::map<std::string, int64_t> ids{{"[PAD]", kPad}, {"[UNK]", kUnk}, {"[CLS]", kCls}};
  int64_t id(const std::string& w) const {
    auto it = ids.find(w);
    return it == ids.end() ? kUnk : it->second;
  }
};

// The model: token + position embeddings, a Transformer encoder, a classifier on [CLS].
class SentimentTransformer : public nn::Module {
 public:
  SentimentTransformer(size_t vocab, size_t max_len, const nn::TransformerOptions& opt, size_t layers) {
    tokens = register_module("tokens", std::make_shared<nn::Embedding>(vocab, opt.hidden_size, Vocab::kPad));
    positions = register_module("positions", std::make_shared<nn::Embedding>(max_len, opt.hidden_size));
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(opt.hidden_size, opt.layer_norm_eps));
    encoder = register_module("encoder", std::make_shared<nn::Encoder>(opt, layers));
    classifier = register_module("classifier", std::make_shared<nn::Linear>(opt.hidden_size, 2));
    dropout_p = opt.hidden_dropout;
  }

  // ids (B, T) row-major, mask (B, T) of 0/1. Returns logits (B, 2).
  Tensor forward(const std::vector<int64_t>& ids, const Tensor& mask) {
    const size_t B = mask.size(0), T = mask.size(1);
    std::vector<int64_t> pos(B * T);
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int64_t(i % T);
    Tensor h = add(tokens->forward(ids, {B, T}), positions->forward(pos, {B, T}));
    h = dropout(norm->forward(h), dropout_p, is_training());
    h = encoder->forward(h, nn::additive_attention_mask(mask));
    const Tensor cls = reshape(slice(h, 1, 0, 1), {long(B), -1});  // hidden state of [CLS]
    return classifier->forward(cls);
  }

  std::shared_ptr<nn::Embedding> tokens, positions;
  std::shared_ptr<nn::LayerNorm> norm;
  std::shared_ptr<nn::Encoder> encoder;
  std::shared_ptr<nn::Linear> classifier;
  float dropout_p;
};

// Pads a batch to its longest sentence.
void make_batch(const std::vector<Example>& data, size_t begin, size_t end, std::vector<int64_t>& ids,
                Tensor& mask, std::vector<int64_t>& labels) {
  size_t T = 0;
  for (size_t i = begin; i < end; ++i) T = std::max(T, data[i].ids.size());
  ids.assign((end - begin) * T, Vocab::kPad);
  mask = Tensor::zeros({end - begin, T});
  labels.clear();
  for (size_t i = begin; i < end; ++i) {
    const auto& ex = data[i];
    std::copy(ex.ids.begin(), ex.ids.end(), ids.begin() + long((i - begin) * T));
    std::fill_n(mask.data() + (i - begin) * T, ex.ids.size(), 1.f);
    labels.push_back(ex.label);
  }
}

// The logits of every example, in order (eval mode, no gradients).
std::vector<float> all_logits(SentimentTransformer& model, const std::vector<Example>& data, size_t batch) {
  NoGradGuard no_grad;
  model.eval();
  std::vector<float> out;
  std::vector<int64_t> ids, labels;
  Tensor mask;
  for (size_t b = 0; b < data.size(); b += batch) {
    make_batch(data, b, std::min(data.size(), b + batch), ids, mask, labels);
    const std::vector<float> l = model.forward(ids, mask).to_vector();
    out.insert(out.end(), l.begin(), l.end());
  }
  model.train();
  return out;
}

double evaluate(SentimentTransformer& model, const std::vector<Example>& data, size_t batch) {
  const std::vector<float> logits = all_logits(model, data, batch);
  size_t correct = 0;
  for (size_t i = 0; i < data.size(); ++i) correct += int64_t(logits[2 * i + 1] > logits[2 * i]) == data[i].label;
  return double(correct) / double(data.size());
}

}  // namespace

int main(int argc, char** argv) try {
  Options opt;
  CLI::App app{"Trains a small Transformer sentiment classifier written against the nn API.", "custom_model"};
  xg::cli::show_defaults(app);
  app.add_option("--train-file,--data", opt.data, "TSV: source, label 0/1, text")->type_name("FILE");
  xg::cli::add_number(app, "--num-train-epochs,--epochs", opt.epochs, "passes over the training split")->check(xg::cli::positive());
  xg::cli::add_number(app, "--per-device-train-batch-size,--batch", opt.batch, "sentences per step")->check(xg::cli::positive());
  xg::cli::add_number(app, "--learning-rate,--lr", opt.lr, "peak learning rate (AdamW, warm-up then linear decay)")->check(xg::cli::positive());
  xg::cli::add_number(app, "--seed", opt.seed, "seed for the split, weights and order");
  app.add_option("--save", opt.save, "where the trained weights go (safetensors), reloaded into a fresh model to check "
                                     "them (default: a temporary file, removed afterwards)")->type_name("FILE");
  if (auto code = xg::cli::parse_or_exit(app, argc, argv)) return *code;
  if (!app.count("--train-file")) opt.data = bundled_data_path(opt.data);  // the bundled set, from any working directory

  // ---- data: source \t label \t text, shuffled and split ----
  std::ifstream in(opt.data);
  if (!in) {
    fmt::print(stderr, "custom_model: cannot open {}\n", opt.data);
    return 1;
  }
  std::vector<std::pair<std::vector<std::string>, int64_t>> rows;
  std::string line;
  std::getline(in, line);  // header
  for (size_t n = 2; std::getline(in, line); ++n) {
    std::istringstream fields(line);
    std::string source, label, text;
    if (!std::getline(fields, source, '\t') || !std::getline(fields, label, '\t') || !std::getline(fields, text) ||
        (label != "0" && label != "1")) {
      fmt::print(stderr, "custom_model: {}:{}: expected 'source<TAB>0|1<TAB>text'\n", opt.data, n);
      return 1;
    }
    rows.emplace_back(words_of(text), label == "1");
  }
  if (rows.size() < 10) {
    fmt::print(stderr, "custom_model: {} has only {} examples\n", opt.data, rows.size());
    return 1;
  }
  Generator gen(opt.seed);
  for (size_t i = rows.size(); i-- > 1;) std::swap(rows[i], rows[gen.below(i + 1)]);
  const size_t n_test = size_t(double(rows.size()) * opt.test_fraction);
  const size_t n_train = rows.size() - n_test;

  Vocab vocab;  // words seen at least min_word_count times in the training split
  std::map<std::string, size_t> counts;
  for (size_t i = 0; i < n_train; ++i)
    for (auto& w : rows[i].first) ++counts[w];
  for (auto& [w, c] : counts)
    if (c >= opt.min_word_count) vocab.ids.emplace(w, int64_t(vocab.ids.size()));
  auto encode = [&](const std::vector<std::string>& words, int64_t label) {
    Example ex{{Vocab::kCls}, label};
    for (size_t i = 0; i < words.size() && ex.ids.size() < opt.max_len; ++i) ex.ids.push_back(vocab.id(words[i]));
    return ex;
  };
  std::vector<Example> train, test;
  for (size_t i = 0; i < rows.size(); ++i) (i < n_train ? train : test).push_back(encode(rows[i].first, rows[i].second));

  // ---- model and training machinery ----
  nn::TransformerOptions topt;
  topt.hidden_size = 64;
  topt.num_heads = 4;
  topt.intermediate_size = 128;
  SentimentTransformer model(vocab.ids.size(), opt.max_len, topt, /*layers=*/2);
  nn::init::bert_init(model, 0.02f, gen);
  optim::AdamW adamw(optim::bert_param_groups(model.named_parameters(), opt.weight_decay), opt.lr);
  const size_t steps_per_epoch = (train.size() + opt.batch - 1) / opt.batch;
  const int64_t total = int64_t(steps_per_epoch * opt.epochs);
  const auto schedule = optim::LrSchedule::linear(opt.lr, int64_t(opt.warmup_fraction * float(total)), total);
  schedule.validate();
  fmt::print("{} training / {} test sentences, vocabulary {}, model {} parameters, {} steps\n", train.size(),
             test.size(), vocab.ids.size(), model.num_parameters(), total);

  const auto start = std::chrono::steady_clock::now();
  std::vector<int64_t> ids, labels;
  Tensor mask;
  int64_t step = 0;
  for (size_t epoch = 1; epoch <= opt.epochs; ++epoch) {
    for (size_t i = train.size(); i-- > 1;) std::swap(train[i], train[gen.below(i + 1)]);
    double loss_sum = 0;
    for (size_t b = 0; b < train.size(); b += opt.batch) {
      make_batch(train, b, std::min(train.size(), b + opt.batch), ids, mask, labels);
      adamw.set_lr(schedule.at(step++));
      Tensor loss = cross_entropy(model.forward(ids, mask), labels);
      loss.backward();
      optim::clip_grad_norm(model.parameters(), 1.f);
      adamw.step();
      adamw.zero_grad();
      loss_sum += loss.item();
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("epoch {}/{}  loss {:.4f}  train accuracy {:.1f}%  test accuracy {:.1f}%  ({:.1f} s)\n", epoch,
               opt.epochs, loss_sum / double(steps_per_epoch), 100 * evaluate(model, train, 256),
               100 * evaluate(model, test, 256), secs);
  }

  // ---- checkpoint: save, then load into a fresh model (strict: every name and shape must match) ----
  const bool temporary = opt.save.empty();
  const std::string path =
      temporary ? (std::filesystem::temp_directory_path() / fmt::format("custom_model_{}.safetensors", ::getpid())).string() : opt.save;
  SentimentTransformer reloaded(vocab.ids.size(), opt.max_len, topt, /*layers=*/2);
  try {
    nn::safetensors::save(model, path);
    nn::safetensors::load(reloaded, path);
  } catch (...) {
    if (temporary) std::filesystem::remove(path);
    throw;
  }
  if (temporary) std::filesystem::remove(path);
  if (all_logits(reloaded, test, 256) != all_logits(model, test, 256))
    throw std::runtime_error(fmt::format("the model reloaded from {} gives other logits than the one saved", path));
  fmt::print("saved to {} and reloaded: the same logits on all {} test sentences (test accuracy {:.1f}%)\n",
             temporary ? "a temporary file" : path, test.size(), 100 * evaluate(reloaded, test, 256));
  return 0;
} catch (const std::exception& e) {  // every error ends here, named, with exit status 1
  fmt::print(stderr, "{}\n", xg::cli::error_line("custom_model", e.what()));
  return 1;
}
