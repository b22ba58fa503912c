#include "training/metric_sinks.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "util/atomic_file.hpp"

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

TensorBoardSink::TensorBoardSink(const std::string& log_dir, int64_t resumed_step) : writer_(log_dir) {
  if (resumed_step >= 0) writer_.add_session_start(resumed_step + 1);  // events at or past it are stale
}

void TensorBoardSink::write(int64_t step, const Scalars& scalars) {
  for (const auto& [name, value] : scalars) writer_.add_scalar(name, value, step);
  writer_.flush();
}

namespace {
// Keeps the rows of steps <= `step` (and drops a line a kill cut short).
void drop_rows_after(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    const nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_object() && row.contains("step") && row["step"].is_number_integer() && row["step"].get<int64_t>() <= step)
      kept += line + "\n";
    else
      dropped = true;
  }
  if (dropped) write_text_atomically(path, kept);
}
}  // namespace

std::vector<std::unique_ptr<MetricsSink>> make_sinks(const std::string& out_dir, const std::string& tensorboard_dir,
                                                     int64_t resumed_step) {
  std::vector<std::unique_ptr<MetricsSink>> sinks;
  const std::string jsonl = (std::filesystem::path(out_dir) / "metrics.jsonl").string();
  if (resumed_step >= 0) drop_rows_after(jsonl, resumed_step);
  sinks.push_back(std::make_unique<JsonlSink>(jsonl));
  if (!tensorboard_dir.empty()) sinks.push_back(std::make_unique<TensorBoardSink>(tensorboard_dir, resumed_step));
  return sinks;
}

}  // namespace xg::training
