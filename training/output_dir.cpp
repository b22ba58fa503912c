#include "training/output_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace fs = std::filesystem;

namespace xg::training {

namespace {
bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

constexpr const char* kReplacedPrefix = ".replaced.";

// checkpoint-000042.tmp.123 and the like: a save or a removal that a kill interrupted; .replaced.123:
// the files an --overwrite run set aside, killed before its first step. Under the lock no other
// run is writing here, so they are stale.
bool is_leftover(const std::string& name) {
  return (starts_with(name, "checkpoint-") && (name.find(".tmp") != std::string::npos || name.find(".old.") != std::string::npos ||
                                              name.find(".del.") != std::string::npos)) ||
         starts_with(name, kReplacedPrefix);
}
// What a run writes into its --out directory (and --overwrite replaces): checkpoints, the best
// model and multi-task's per-task ones, metrics, a vocabulary trained from the corpus.
bool is_run_file(const std::string& name) {
  static const char* const kFiles[] = {"metrics.jsonl", "best", "tasks", "vocab.txt", "vocab.json", "merges.txt", "spiece.model"};
  return starts_with(name, "checkpoint-") || std::find(std::begin(kFiles), std::end(kFiles), name) != std::end(kFiles);
}
}  // namespace

OutputDirectory::OutputDirectory(const std::string& path, bool resuming, bool overwrite) : path_(path) {
  std::error_code ec;
  created_ = !fs::exists(path, ec);
  fs::create_directories(path, ec);
  if (ec) throw std::runtime_error(fmt::format("[trainer] --out {}: cannot create the directory: {}", path, ec.message()));
  if (!fs::is_directory(path)) throw std::runtime_error(fmt::format("[trainer] --out {}: not a directory", path));
  fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(fmt::format("[trainer] --out {}: cannot open: {}", path, std::strerror(errno)));
  try {
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0)
      throw std::runtime_error(errno == EWOULDBLOCK
                                   ? fmt::format("[trainer] --out {}: another run is writing into it (two runs in one directory "
                                                 "would overwrite each other's checkpoints); choose another --out",
                                                 path)
                                   : fmt::format("[trainer] --out {}: cannot lock: {}", path, std::strerror(errno)));
    // Found now rather than at the first save, after minutes of training.
    const std::string probe = (fs::path(path) / fmt::format(".write-test.{}", ::getpid())).string();
    const int probe_fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (probe_fd < 0) throw std::runtime_error(fmt::format("[trainer] --out {}: not writable: {}", path, std::strerror(errno)));
    ::close(probe_fd);
    ::unlink(probe.c_str());

    std::vector<std::string> leftovers, held;
    for (const auto& e : fs::directory_iterator(path)) {
      const std::string name = e.path().filename().string();
      (is_leftover(name) ? leftovers : held).push_back(name);
    }
    for (const auto& name : leftovers) fs::remove_all(fs::path(path) / name);
    std::sort(held.begin(), held.end());
    if (!resuming && !held.empty()) {
      if (!overwrite) {
        std::string shown;
        for (size_t i = 0; i < held.size() && i < 3; ++i) shown += (i ? ", " : "") + held[i];
        if (held.size() > 3) shown += fmt::format(" and {} more", held.size() - 3);
        throw std::runtime_error(fmt::format("[trainer] --out {} is not empty ({}): --resume {} continues the run saved there, "
                                             "--overwrite replaces it, or choose another --out",
                                             path, shown, path));
      }
      // Set aside, not removed, until this run makes its first step: a start that fails (a mistyped
      // corpus) puts them back.
      for (const auto& name : held) {
        if (!is_run_file(name)) continue;
        if (replaced_.empty()) {
          replaced_ = (fs::path(path) / fmt::format("{}{}", kReplacedPrefix, ::getpid())).string();
          fs::create_directory(replaced_);
        }
        fs::rename(fs::path(path) / name, fs::path(replaced_) / name);
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

void OutputDirectory::drop_replaced() {
  if (replaced_.empty()) return;
  fs::remove_all(replaced_);
  replaced_.clear();
}

void OutputDirectory::discard_start() {
  std::error_code ec;  // best effort: the error that failed the start is the one to report
  if (created_) {
    fs::remove_all(path_, ec);
    return;
  }
  if (replaced_.empty()) return;
  for (const auto& e : fs::directory_iterator(replaced_, ec)) {
    const fs::path back = fs::path(path_) / e.path().filename();
    fs::remove_all(back, ec);  // what the failed start wrote in its place (a vocabulary)
    fs::rename(e.path(), back, ec);
  }
  fs::remove(replaced_, ec);
  replaced_.clear();
}

}  // namespace xg::training
