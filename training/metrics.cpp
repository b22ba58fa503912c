#include "training/metrics.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace xg::training {

JsonlSink::JsonlSink(const std::string& path) : path_(path), out_(path, std::ios::app) {
  if (!out_) throw std::runtime_error(fmt::format("[metrics] {}: cannot open for appending", path));
}

void JsonlSink::write(int64_t step, const Scalars& scalars) {
  nlohmann::json j = {{"step", step}};
  for (const auto& [name, value] : scalars) j[name] = value;
  out_ << j.dump() << "\n" << std::flush;
  if (!out_) throw std::runtime_error(fmt::format("[metrics] {}: write failed", path_));
}

TensorBoardSink::TensorBoardSink(const std::string& log_dir) : writer_(log_dir) {}

void TensorBoardSink::write(int64_t step, const Scalars& scalars) {
  for (const auto& [name, value] : scalars) writer_.add_scalar(name, value, step);
  writer_.flush();
}

std::vector<std::unique_ptr<MetricsSink>> make_sinks(const std::string& out_dir, const std::string& tensorboard_dir) {
  std::vector<std::unique_ptr<MetricsSink>> sinks;
  sinks.push_back(std::make_unique<JsonlSink>((std::filesystem::path(out_dir) / "metrics.jsonl").string()));
  if (!tensorboard_dir.empty()) sinks.push_back(std::make_unique<TensorBoardSink>(tensorboard_dir));
  return sinks;
}

}  // namespace xg::training
