#pragma once
// Pre-training runs for the tests that train, and reading what they wrote: metrics rows, JSON
// files, and the largest weight difference between two checkpoints.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nn/safetensors.hpp"
#include "training/tasks/pretraining.hpp"

// bert_pretrain's two option sets, run in-process.
struct PretrainRun {
  xg::training::TrainerOptions trainer;
  xg::training::PretrainOptions task;
  int64_t go() const { return xg::training::run_pretraining(trainer, task).step; }
};

// A short, quiet run of `model` ("roberta-tiny") on tests/data/pretrain_sample.txt into a fresh
// `out`: a vocabulary of `vocab` tokens trained first, batches of 8 x `seq_len`, a loss row each
// step, evaluated and saved at its last step only.
inline PretrainRun small_pretrain_run(const std::string& model, const std::string& out, int64_t steps, size_t vocab = 600,
                                      size_t seq_len = 48, float lr = 2e-3f) {
  PretrainRun r;
  r.task.corpus = std::string(XGRAD_TEST_DATA_DIR) + "/pretrain_sample.txt";
  r.task.model = model;
  r.task.train_vocab = vocab;
  r.task.seq_len = seq_len;
  r.task.eval_instances = 16;
  r.trainer.batch = 8;
  r.trainer.lr = lr;
  r.trainer.steps = steps;
  r.trainer.eval_every = steps;
  r.trainer.save_every = 0;
  r.trainer.log_every = 1;
  r.trainer.quiet = true;
  r.trainer.out = out;
  std::filesystem::remove_all(out);
  return r;
}

// The rows of OUT/metrics.jsonl.
inline std::vector<nlohmann::json> metrics_rows(const std::string& out) {
  std::ifstream in(std::filesystem::path(out) / "metrics.jsonl");
  std::vector<nlohmann::json> rows;
  for (std::string l; std::getline(in, l);) rows.push_back(nlohmann::json::parse(l));
  return rows;
}

// The largest difference between two checkpoints' weights.
inline double weight_difference(const std::string& a_file, const std::string& b_file) {
  const auto a = xg::nn::safetensors::read_float_tensors(a_file);
  const auto b = xg::nn::safetensors::read_float_tensors(b_file);
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (const auto& [n, t] : a)
    for (size_t i = 0; i < t.numel(); ++i) worst = std::max(worst, double(std::fabs(t.data()[i] - b.at(n).data()[i])));
  return worst;
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}
inline void write_json(const std::filesystem::path& p, const nlohmann::json& j) { std::ofstream(p) << j.dump(2); }
