#include "nn/execution.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace xg::nn {

namespace {
ExecutionOptions g_default;

// The environment's `name` as a switch, `value` when unset.
bool env_switch(const char* name, bool value) {
  const char* env = std::getenv(name);
  if (!env) return value;
  const std::string v = env;
  if (v == "0" || v == "off" || v == "false" || v == "no") return false;
  if (v == "1" || v == "on" || v == "true" || v == "yes") return true;
  throw std::invalid_argument(fmt::format("{}='{}': expected 0 or 1 (off/on, false/true, no/yes)", name, v));
}
}  // namespace

ExecutionOptions ExecutionOptions::from_environment() {
  ExecutionOptions e;
  e.fused_inference = env_switch("XGRAD_FUSED_INFERENCE", e.fused_inference);
  e.flash_attention = env_switch("XGRAD_FLASH_ATTENTION", e.flash_attention);
  e.padding_free = env_switch("XGRAD_PADDING_FREE", e.padding_free);
  e.sparse_last_layer = env_switch("XGRAD_SPARSE_LAST_LAYER", e.sparse_last_layer);
  e.packed_weights = env_switch("XGRAD_PACKED_WEIGHTS", e.packed_weights);
  return e;
}

const ExecutionOptions& default_execution() { return g_default; }
void set_default_execution(const ExecutionOptions& options) { g_default = options; }

}  // namespace xg::nn
