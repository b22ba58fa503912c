#pragma once
// Process-wide on/off switches (the fused inference path, memory-linear attention, padding-free
// training): read once
// from the environment, overridable at run time, and set for a scope by a guard.
#include <cstdlib>
#include <cstring>

namespace xg::nn {

// `default_on` unless the environment variable `name` is set: "0" is off, anything else on.
inline bool env_switch(const char* name, bool default_on = true) {
  const char* env = std::getenv(name);
  if (!env) return default_on;
  return std::strcmp(env, "0") != 0;
}

// Sets a switch for a scope, restoring the previous value on exit.
template <bool (*Get)(), void (*Set)(bool)>
class SwitchGuard {
 public:
  explicit SwitchGuard(bool on) : previous_(Get()) { Set(on); }
  ~SwitchGuard() { Set(previous_); }
  SwitchGuard(const SwitchGuard&) = delete;
  SwitchGuard& operator=(const SwitchGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace xg::nn
