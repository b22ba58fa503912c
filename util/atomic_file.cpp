#include "util/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

namespace xg {

void write_file_atomically(const std::string& path, const std::function<bool(std::FILE*)>& write) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw std::runtime_error(fmt::format("[write] {}: cannot create temporary file {}", path, tmp));
  bool ok = false;
  try {
    ok = write(f);
  } catch (...) {  // nothing of it stays behind: neither the open file nor the temporary one
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  ok = ok && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format(
        "[write] {}: write failed (disk full or no permission?); the previous file, if any, is untouched", path));
  }
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](std::FILE* f) { return std::fwrite(text.data(), 1, text.size(), f) == text.size(); });
}

void write_directory_atomically(const std::string& dir, const std::string& what,
                                const std::function<void(const std::string& tmp)>& fill) {
  namespace fs = std::filesystem;
  const fs::path target(dir), tmp(fmt::format("{}.tmp.{}", dir, ::getpid()));
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    fill(tmp.string());
    const fs::path old(fmt::format("{}.old.{}", dir, ::getpid()));
    fs::remove_all(old);
    if (fs::exists(target)) fs::rename(target, old);
    fs::rename(tmp, target);
    fs::remove_all(old);
  } catch (const std::exception& e) {
    fs::remove_all(tmp);
    throw std::runtime_error(fmt::format("[{}] {}: {}", what, dir, e.what()));
  }
}

}  // namespace xg
