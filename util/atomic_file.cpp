#include "util/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <stdexcept>

namespace xg {

void write_file_atomically(const std::string& path, const std::function<bool(std::FILE*)>& write) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw std::runtime_error(fmt::format("[write] {}: cannot create temporary file {}", path, tmp));
  bool ok = write(f);
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

}  // namespace xg
