#include "training/output_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace fs = std::filesystem;

namespace xg::training {

namespace {
bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

constexpr const char* kReplacedPrefix = ".replaced.";
// Present while a fresh start has not made its first step. A start killed before then (Ctrl-C or
// SIGTERM while it reads the corpus, kill -9, out of memory) leaves it, and the next run here
// removes what that start wrote: nothing it holds can be resumed.
constexpr const char* kStartingMarker = ".starting";
// Written by every run into its --out directory and kept: the proof that the run files there
// (checkpoints, metrics, a trained vocabulary) are a run's, which --overwrite may replace.
constexpr const char* kRunMarker = ".xgrad-run";

bool is_run_marker(const std::string& name) { return name == kRunMarker; }

bool is_checkpoint(const std::string& name) { return starts_with(name, "checkpoint-"); }

// checkpoint-000042.tmp.123 and the like: a save or a removal that a kill interrupted. Under the
// lock no other run is writing here, so they are stale.
bool is_leftover(const std::string& name) {
  return is_checkpoint(name) &&
         (name.find(".tmp") != std::string::npos || name.find(".old.") != std::string::npos || name.find(".del.") != std::string::npos);
}
// What a run writes into its --out directory (and --overwrite replaces): checkpoints, metrics, a
// vocabulary trained from the corpus ...
bool is_run_file(const std::string& name) {
  static const char* const kFiles[] = {"metrics.jsonl", "vocab.txt", "vocab.json", "merges.txt", "spiece.model"};
  return is_checkpoint(name) || std::find(std::begin(kFiles), std::end(kFiles), name) != std::end(kFiles);
}
// ... and the best model and multi-task's per-task ones, set aside only once the task is built:
// the new run may start from the earlier one's best (--model OUT/best).
bool is_run_model(const std::string& name) { return name == "best" || name == "tasks"; }
// A run file, or one half-written when a kill came (vocab.txt.tmp, merges.txt.tmp.PID,
// spiece.model.training.model): what a start killed before its first step may have left.
bool is_run_file_or_part(const std::string& name) {
  static const char* const kFiles[] = {"metrics.jsonl.", "vocab.txt.", "vocab.json.", "merges.txt.", "spiece.model."};
  return is_run_file(name) || std::any_of(std::begin(kFiles), std::end(kFiles), [&](const char* f) { return starts_with(name, f); });
}
// Whether `dir` provably holds a run's files: its run mark, or (runs written before the mark) a
// checkpoint with its training state.
bool holds_a_run(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / kRunMarker, ec)) return true;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_checkpoint(e.path().filename().string()) && fs::exists(e.path() / "training_state.json", ec)) return true;
  return false;
}

// Whether `inner` is `outer` or lies inside it (both resolved).
bool within(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(inner, ec), b = fs::weakly_canonical(outer, ec);
  auto ia = a.begin();
  for (auto ib = b.begin(); ib != b.end(); ++ib, ++ia)
    if (ia == a.end() || *ia != *ib) return false;
  return true;
}

// A start killed before its first step left its mark in `dir`: when no checkpoint is there, what it
// wrote goes (returned, sorted); then the mark.
std::vector<std::string> clear_killed_start(const fs::path& dir) {
  std::vector<std::string> names, cleared;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  if (std::none_of(names.begin(), names.end(), is_checkpoint))
    std::copy_if(names.begin(), names.end(), std::back_inserter(cleared), is_run_file_or_part);
  std::sort(cleared.begin(), cleared.end());
  for (const auto& name : cleared) fs::remove_all(dir / name);
  fs::remove(dir / kStartingMarker);
  return cleared;
}

// Moves what `stash` holds back into `dir`, replacing what is there when `replace`, else keeping
// it; then removes the stash. Best effort (errors ignored): it runs on the way out of a failure.
void put_back(const fs::path& stash, const fs::path& dir, bool replace) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(stash, ec)) {
    const fs::path back = dir / e.path().filename();
    if (fs::exists(back, ec)) {
      if (!replace) continue;
      fs::remove_all(back, ec);
    }
    fs::rename(e.path(), back, ec);
  }
  fs::remove_all(stash, ec);
}
}  // namespace

OutputDirectory::OutputDirectory(const std::string& path, bool resuming, bool overwrite, const std::vector<std::string>& inputs)
    : path_(path) {
  std::error_code ec;
  created_ = !fs::exists(path, ec);
  fs::create_directories(path, ec);
  if (ec) throw std::runtime_error(fmt::format("[trainer] --output-dir {}: cannot create the directory: {}", path, ec.message()));
  if (!fs::is_directory(path)) throw std::runtime_error(fmt::format("[trainer] --output-dir {}: not a directory", path));
  fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(fmt::format("[trainer] --output-dir {}: cannot open: {}", path, std::strerror(errno)));
  try {
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0)
      throw std::runtime_error(errno == EWOULDBLOCK
                                   ? fmt::format("[trainer] --output-dir {}: another run is writing into it (two runs in one directory "
                                                 "would overwrite each other's checkpoints); choose another --output-dir",
                                                 path)
                                   : fmt::format("[trainer] --output-dir {}: cannot lock: {}", path, std::strerror(errno)));
    // Found now rather than at the first save, after minutes of training.
    const std::string probe = (fs::path(path) / fmt::format(".write-test.{}", ::getpid())).string();
    const int probe_fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (probe_fd < 0) throw std::runtime_error(fmt::format("[trainer] --output-dir {}: not writable: {}", path, std::strerror(errno)));
    ::close(probe_fd);
    ::unlink(probe.c_str());

    std::vector<std::string> leftovers, stashes, held;
    for (const auto& e : fs::directory_iterator(path)) {
      const std::string name = e.path().filename().string();
      if (starts_with(name, kReplacedPrefix)) stashes.push_back(name);
      else if (is_leftover(name)) leftovers.push_back(name);
    }
    for (const auto& name : leftovers) fs::remove_all(fs::path(path) / name);
    const fs::path marker = fs::path(path) / kStartingMarker;
    if (fs::exists(marker)) cleared_ = clear_killed_start(path);
    // an earlier run's files that an --overwrite start set aside and could not put back (killed
    // before its first step): back where they were
    for (const auto& name : stashes) put_back(fs::path(path) / name, path, /*replace=*/false);
    for (const auto& e : fs::directory_iterator(path)) {
      const std::string name = e.path().filename().string();
      if (!is_leftover(name) && !is_run_marker(name)) held.push_back(name);
    }
    std::sort(held.begin(), held.end());
    if (!resuming && !held.empty()) {
      std::string shown;
      for (size_t i = 0; i < held.size() && i < 3; ++i) shown += (i ? ", " : "") + held[i];
      if (held.size() > 3) shown += fmt::format(" and {} more", held.size() - 3);
      if (!holds_a_run(path))
        throw std::runtime_error(fmt::format("[trainer] --output-dir {} holds files no training run wrote ({}): a run writes into an "
                                             "empty or new directory (--overwrite replaces only an earlier run's files); "
                                             "choose another --output-dir", path, shown));
      if (!overwrite) {
        // a run killed after its first step but before its first save has nothing to resume
        if (std::none_of(held.begin(), held.end(), is_checkpoint))
          throw std::runtime_error(fmt::format("[trainer] --output-dir {} holds an earlier run's files ({}) but no checkpoint (a run "
                                               "stopped before its first save): --overwrite replaces them, or choose another "
                                               "--output-dir", path, shown));
        throw std::runtime_error(fmt::format("[trainer] --output-dir {} is not empty ({}): --resume-from-checkpoint {} continues the run saved there, "
                                             "--overwrite replaces it, or choose another --output-dir",
                                             path, shown, path));
      }
      for (const auto& name : held)
        for (const auto& in : inputs)
          if (is_run_file(name) && within(in, fs::path(path) / name))
            throw std::runtime_error(fmt::format("[trainer] --output-dir {} --overwrite would set aside {}, which this run reads ({}): "
                                                 "copy it out of {} first, or choose another --output-dir", path, name, in, path));
      overwriting_ = true;
      set_aside(is_run_file);
    }
    if (!resuming) {
      std::ofstream(marker.string()) << "a run started here and has not made its first step\n";
      const fs::path run_marker = fs::path(path) / kRunMarker;
      if (!fs::exists(run_marker)) {
        std::ofstream(run_marker.string()) << "{\"format\": 1, \"written_by\": \"an xgrad training run: its checkpoints, "
                                              "metrics and trained vocabulary here may be replaced by --overwrite\"}\n";
        marked_here_ = true;
      }
    }
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

OutputDirectory::~OutputDirectory() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

// Set aside, not removed, until this run makes its first step: a start that fails (a mistyped
// corpus) puts them back.
void OutputDirectory::set_aside(bool (*which)(const std::string&)) {
  std::vector<fs::path> names;
  for (const auto& e : fs::directory_iterator(path_))
    if (which(e.path().filename().string())) names.push_back(e.path().filename());
  if (names.empty()) return;
  if (replaced_.empty()) {
    replaced_ = (fs::path(path_) / fmt::format("{}{}", kReplacedPrefix, ::getpid())).string();
    fs::create_directory(replaced_);
  }
  try {
    for (const auto& name : names) fs::rename(fs::path(path_) / name, fs::path(replaced_) / name);
  } catch (...) {  // none lost: what was moved goes back
    put_back(replaced_, path_, /*replace=*/false);
    replaced_.clear();
    throw;
  }
}

void OutputDirectory::set_aside_models() {
  if (overwriting_) set_aside(is_run_model);
}

void OutputDirectory::drop_replaced() {
  std::error_code ec;  // best effort: a stash left behind goes back at the next start, never over this run's files
  if (!replaced_.empty()) fs::remove_all(replaced_, ec);
  replaced_.clear();
  fs::remove(fs::path(path_) / kStartingMarker, ec);  // last: while it is there, a kill leaves the stash to go back
}

void OutputDirectory::discard_start() {
  std::error_code ec;  // best effort: the error that failed the start is the one to report
  if (created_) {
    fs::remove_all(path_, ec);
    return;
  }
  fs::remove(fs::path(path_) / kStartingMarker, ec);
  if (marked_here_) fs::remove(fs::path(path_) / kRunMarker, ec);
  if (replaced_.empty()) return;
  put_back(replaced_, path_, /*replace=*/true);  // over what the failed start wrote (a vocabulary)
  replaced_.clear();
}

}  // namespace xg::training
