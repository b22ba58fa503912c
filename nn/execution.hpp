#pragma once
// How a model runs: which of the equivalent implementations its layers take. Every Module carries
// its own (Module::execution), set on a model and all its sub-modules by Module::set_execution as
// train() sets training mode; a module starts from the process default, which programs set once
// at start from the environment and their flags (set_default_execution, from_environment).
// Nothing below the programs reads the environment.
namespace xg::nn {

struct ExecutionOptions {
  // The tape-free packed encoder (nn/fused_encoder.hpp) when there is no tape to record (gradients
  // off, eval mode) and the mask is a padding mask. XGRAD_FUSED_INFERENCE.
  bool fused_inference = true;
  // Attention as one multi_head_attention op, memory linear in T, training included; off: the
  // unfused composition (matmul, softmax, dropout, matmul) keeping (B, heads, T, T) weights.
  // XGRAD_FLASH_ATTENTION.
  bool flash_attention = true;
  // Encoder layers outside the inference path on a batch's real tokens only (with flash_attention;
  // rows at padded positions are then zero, not what transformers computes there, and question
  // answering leaves them out of its loss). XGRAD_PADDING_FREE; the Trainer's --padding-free.
  bool padding_free = false;
  // Encoder::forward_rows computes its last layer at the wanted rows only, else every row then
  // selects them. XGRAD_SPARSE_LAST_LAYER.
  bool sparse_last_layer = true;
  // Programs serving a model pack its weights once at load (nn/packed_weights.hpp).
  // XGRAD_PACKED_WEIGHTS.
  bool packed_weights = true;

  // Whether encoders drop a batch's padding: padding_free, and flash_attention (packed rows need it).
  bool padding_free_active() const { return padding_free && flash_attention; }
  // The defaults with each XGRAD_* variable above that is set applied: 0, off, false or no turn it
  // off, 1, on, true or yes on; another value throws std::invalid_argument naming the variable.
  static ExecutionOptions from_environment();
};

// What a new Module starts with: ExecutionOptions{} until a program sets another.
const ExecutionOptions& default_execution();
void set_default_execution(const ExecutionOptions& options);

}  // namespace xg::nn
