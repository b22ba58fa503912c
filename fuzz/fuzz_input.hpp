#pragma once
// Shared by the fuzz targets: the readers under test take paths, so each input is written to a
// file in this process's own scratch directory (libFuzzer runs one input at a time per process).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace xg::fuzz {

// $TMPDIR/xgrad-fuzz-PID, created on first use.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("xgrad-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    // removed when the fuzzer exits normally (a crash keeps it, beside the crashing input)
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(std::filesystem::temp_directory_path() / ("xgrad-fuzz-" + std::to_string(::getpid())), ignored);
    });
    return d.string();
  }();
  return dir;
}

// Writes `size` bytes (then `tail_size` more) to scratch_dir()/name and returns the path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size, const uint8_t* tail = nullptr,
                               size_t tail_size = 0) {
  const std::string path = scratch_dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();  // the fuzzer's own machinery failed, not the code under test
  if ((size && std::fwrite(data, 1, size, f) != size) || (tail_size && std::fwrite(tail, 1, tail_size, f) != tail_size)) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace xg::fuzz
