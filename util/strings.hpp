#pragma once
// std::string's C++20 ends_with, for this C++17 code base.
#include <string>

namespace xg {

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace xg
