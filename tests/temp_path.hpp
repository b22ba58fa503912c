#pragma once
// Temporary paths of this test process: test runs in other checkouts of the project share /tmp,
// and one run's clean-up must not remove another's files mid-test.
#include <unistd.h>

#include <filesystem>
#include <string>

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()))).string();
}
