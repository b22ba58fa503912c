#include "training/checkpoints.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>
#include <utility>
#include <unistd.h>

#include "util/atomic_file.hpp"
#include "util/json_input.hpp"

namespace fs = std::filesystem;

namespace xg::training {

namespace {
constexpr const char* kStateFile = "training_state.json";
// 1 (no "format" field): before the Trainer/Task split. 2: options saved under their short names
// (`lr`, `seq_len`), which format 3's canonical names (`learning_rate`, `max_seq_length`) take as
// aliases when restoring.
constexpr int kStateFormat = 3;
}  // namespace

std::string checkpoint_name(int64_t step) { return fmt::format("checkpoint-{:06d}", step); }

void remove_checkpoint(const std::string& dir) {
  // Renamed first: a kill during the removal leaves a .del directory (cleaned up by the next run),
  // never a half-removed checkpoint that still looks whole.
  const std::string doomed = dir + fmt::format(".del.{}", ::getpid());
  fs::rename(dir, doomed);
  fs::remove_all(doomed);
}

void prune_checkpoints(const std::string& out_dir, size_t keep, int64_t saved_step) {
  // Only this run's line: checkpoints numbered above the one just saved came from elsewhere (a run
  // resumed from an earlier checkpoint) and are not this save's to judge; the new one always stays.
  std::vector<std::string> line;
  for (const auto& c : list_checkpoints(out_dir))
    if (*checkpoint_step(fs::path(c).filename().string()) <= saved_step) line.push_back(c);
  for (size_t i = 0; i + std::max<size_t>(keep, 1) < line.size(); ++i) remove_checkpoint(line[i]);
}

std::string resolve_checkpoint(const std::string& path) {
  if (fs::exists(fs::path(path) / kStateFile)) return path;
  const auto all = list_checkpoints(path);
  for (auto it = all.rbegin(); it != all.rend(); ++it)
    if (fs::exists(fs::path(*it) / kStateFile)) return *it;
  throw std::runtime_error(fmt::format("[resume] --resume-from-checkpoint {}: no checkpoint with {} there", path, kStateFile));
}

bool has_checkpoint(const std::string& out_dir) {
  for (const auto& c : list_checkpoints(out_dir))
    if (fs::exists(fs::path(c) / kStateFile)) return true;
  return false;
}

TrainingState TrainingState::read(const std::string& checkpoint_dir) {
  const std::string path = (fs::path(checkpoint_dir) / kStateFile).string();
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("[resume] {}: cannot open", path));
  TrainingState s;
  try {
    const nlohmann::json j = parse_json_bounded(in);
    if (!j.is_object()) throw std::runtime_error(fmt::format("expected a JSON object, got {}", json_summary(j)));
    const int format = j.contains("format") ? json_integer<int>(j["format"], "format") : 1;
    if (format > kStateFormat)
      throw std::runtime_error(fmt::format("format {} is newer than this program's {}", format, kStateFormat));
    s.step = json_integer<int64_t>(j.at("step"), "step");
    const auto& g = j.at("rng");
    const auto& words = g.at("s");  // the generator's four 64-bit words
    if (!words.is_array() || words.size() != 4)
      throw std::runtime_error(fmt::format("rng.s must be 4 integers, got {}", json_summary(words)));
    for (size_t k = 0; k < 4; ++k) s.rng.s[k] = json_integer<uint64_t>(words[k], "rng.s");
    s.rng.has_spare = g.at("has_spare").get<bool>();
    s.rng.spare = g.at("spare").get<float>();
    s.schedule = optim::LrSchedule::from_json(j.at("schedule"));
    s.options = j.at("options");
    if (format == 1) {  // the MLM+NSP pre-trainer's layout, the only task of that time
      s.data = {{"epoch", j.at("data_epoch")}, {"index", j.at("data_index")}};
    } else {
      s.data = j.at("data");
      s.task = j.at("task");
    }
    if (j.contains("world_size")) s.world_size = json_integer<int>(j["world_size"], "world_size");
    if (s.world_size < 1) throw std::runtime_error(fmt::format("world_size {} is not a number of ranks", s.world_size));
    if (j.contains("stopped_early")) s.stopped_early = j["stopped_early"].get<bool>();
  } catch (const std::exception& e) {  // JSON errors name the field
    throw std::runtime_error(fmt::format("[resume] {}: {}", path, e.what()));
  }
  return s;
}

void TrainingState::write(const std::string& dir) const {
  const nlohmann::json j = {{"format", kStateFormat},
                            {"task", task},
                            {"step", step},
                            {"rng", {{"s", {rng.s[0], rng.s[1], rng.s[2], rng.s[3]}}, {"has_spare", rng.has_spare}, {"spare", rng.spare}}},
                            {"schedule", schedule.to_json()},
                            {"options", options},
                            {"data", data},
                            {"world_size", world_size},
                            {"stopped_early", stopped_early}};
  write_text_atomically((fs::path(dir) / kStateFile).string(), j.dump(2) + "\n");
}

}  // namespace xg::training
