#pragma once
// Temporary paths of this test process, all inside one directory of its own
// (TMPDIR/xgrad_tests.XXXXXX, made by mkdtemp): test runs in other checkouts of the project share
// /tmp, and one run's clean-up must not remove another's files mid-test. The directory goes, with
// whatever a test left in it (a file kept after a failed check, what a throwing call wrote), when
// the process exits; a process killed before that leaves it behind, and no later one reuses it.
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

inline const std::filesystem::path& test_temp_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string pattern = (std::filesystem::temp_directory_path() / "xgrad_tests.XXXXXX").string();
      if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary directory from " + pattern);
      path = pattern;
    }
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Dir dir;
  return dir.path;
}

inline std::string temp_path(const std::string& name) { return (test_temp_dir() / name).string(); }
