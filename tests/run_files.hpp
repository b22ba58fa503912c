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

// The rows of OUT/metrics.jsonl.
inline std::vector<nlohmann::json> metrics(const std::string& out) {
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
