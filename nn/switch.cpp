#include "nn/switch.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace xg::nn {

bool env_switch(const char* name, bool default_on) {
  const char* env = std::getenv(name);
  if (!env) return default_on;
  const std::string v = env;
  if (v == "0" || v == "off" || v == "false" || v == "no") return false;
  if (v == "1" || v == "on" || v == "true" || v == "yes") return true;
  throw std::invalid_argument(fmt::format("{}='{}': expected 0 or 1 (off/on, false/true, no/yes)", name, v));
}

}  // namespace xg::nn
