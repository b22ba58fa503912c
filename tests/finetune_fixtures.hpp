#pragma once
// What the fine-tuning tests share: the bundled data, a tiny model config, labelled sentiment
// lines, quiet trainer options for a short run, and a pre-training checkpoint to start from.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "models/bert/bert_heads.hpp"
#include "models/core/checkpoint.hpp"
#include "text/load_tokenizer.hpp"
#include "training/tasks/finetuning.hpp"
#include "training/trainer.hpp"
#include "util/random.hpp"

namespace xg::test {

// The project's data/ directory, with a trailing slash.
inline const std::string kData = std::string(XGRAD_TEST_DATA_DIR) + "/../../data/";
inline const std::string kVocab = kData + "bert-base-uncased-vocab.txt";

// Writes a one-layer config.json of width `hidden` (2 heads, intermediate 2 x hidden) to `path`
// and returns it; without dropout (unless `dropout`), a run gives the same result every time.
inline std::string write_tiny_model(const std::string& path, int hidden = 32, bool dropout = false) {
  nlohmann::json j = {{"hidden_size", hidden}, {"num_hidden_layers", 1}, {"num_attention_heads", 2}, {"intermediate_size", 2 * hidden}};
  if (!dropout) j["hidden_dropout_prob"] = j["attention_probs_dropout_prob"] = 0.0;
  std::ofstream(path) << j.dump();
  return path;
}

// Fine-tuning options for `task` on `train` and `dev` (`max_len` tokens an example) with the
// bundled vocabulary and a tiny model (write_tiny_model's, in DIR/model.json).
inline training::FinetuneOptions tiny_finetune(const std::string& dir, const std::string& task, const std::string& train,
                                               const std::string& dev, size_t max_len, int hidden = 32, bool dropout = false) {
  training::FinetuneOptions o;
  o.task = task;
  o.train = train;
  o.dev = dev;
  o.vocab = kVocab;
  o.max_len = max_len;
  o.model = write_tiny_model(dir + "/model.json", hidden, dropout);
  return o;
}

// Lines i of data/sentiment_uci.tsv (0-based, after its header) with i % every == at, as
// label<TAB>text with the labels named `positive` and `negative`; returns `path`.
inline std::string write_split(const std::string& path, size_t every, size_t at, const std::string& positive = "1",
                               const std::string& negative = "0") {
  std::ifstream in(kData + "sentiment_uci.tsv");
  std::string line;
  std::getline(in, line);
  std::ofstream out(path);
  out << "label\ttext\n";
  for (size_t i = 0; std::getline(in, line); ++i) {
    if (i % every != at) continue;
    const size_t a = line.find('\t'), b = line.find('\t', a + 1);
    out << (line.substr(a + 1, b - a - 1) == "1" ? positive : negative) << '\t' << line.substr(b + 1) << '\n';
  }
  return path;
}

// A short quiet run into `out` (replacing an earlier one there) over `train_examples`: 10%
// warm-up, a checkpoint only at the end, evaluation once per epoch (as bert_finetune does).
inline training::TrainerOptions quiet_trainer(const std::string& out, size_t epochs, size_t batch, float lr, size_t train_examples) {
  training::TrainerOptions t;
  t.quiet = true;
  t.out = out;
  t.overwrite = true;
  t.epochs = epochs;
  t.batch = batch;
  t.lr = lr;
  t.warmup_ratio = 0.1f;
  t.save_every = 0;
  t.eval_every = int64_t((train_examples + batch - 1) / batch);
  return t;
}

// A BERT pre-training checkpoint in `dir` with the bundled vocabulary, as bert_pretrain leaves
// one (`layers` of width 16, 64 positions, weights drawn with `seed`); returns the model saved.
inline std::unique_ptr<models::BertForPreTraining> write_pretraining_checkpoint(const std::string& dir, size_t layers, uint64_t seed) {
  const auto tok = text::open_tokenizer(kVocab);
  models::BertConfig c;
  c.hidden_size = 16, c.num_hidden_layers = layers, c.num_attention_heads = 2, c.intermediate_size = 32, c.max_position_embeddings = 64;
  c.vocab_size = tok->vocab_size();
  auto pre = std::make_unique<models::BertForPreTraining>(c);
  Generator gen(seed);
  pre->init_weights(gen);
  models::save_pretrained(*pre, dir, [&](const std::string& tmp) { tok->save_pretrained(tmp); });
  return pre;
}

}  // namespace xg::test
