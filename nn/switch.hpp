#pragma once
// Process-wide on/off switches (the fused inference path, memory-linear attention, padding-free
// training, packed serving weights): read from the environment when first used, overridable at
// run time, and set for a scope by a guard.
#include <atomic>
#include <stdexcept>
#include <string>

namespace xg::nn {

// `default_on` unless the environment variable `name` is set: 0, off, false or no turn the switch
// off and 1, on, true or yes on; any other value throws, naming the variable and the value.
bool env_switch(const char* name, bool default_on = true);

// A switch read from the environment on its first use, not at program start, so that a bad value
// is an error the program reports rather than a throw before main.
class EnvSwitch {
 public:
  constexpr EnvSwitch(const char* name, bool default_on) : name_(name), default_on_(default_on) {}
  bool get() {
    int v = state_.load(std::memory_order_relaxed);
    if (v < 0) {
      v = env_switch(name_, default_on_) ? 1 : 0;
      state_.store(v, std::memory_order_relaxed);
    }
    return v == 1;
  }
  void set(bool on) { state_.store(on ? 1 : 0, std::memory_order_relaxed); }

 private:
  const char* name_;
  bool default_on_;
  std::atomic<int> state_{-1};  // -1: not read yet
};

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
