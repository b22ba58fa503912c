#pragma once
// PyTorch's zip checkpoints (torch.save of a state dict, e.g. pytorch_model.bin), read without
// executing anything: the archive's <prefix>/data.pkl goes through the restricted unpickler
// (nn/restricted_unpickler.hpp), which accepts only PyTorch's tensor rebuilding, and each tensor
// is copied out of <prefix>/data/<key> after its storage offset, sizes and strides are checked
// against the storage. Views of one storage (shared weights, slices) and non-contiguous strides
// come out as contiguous tensors. The legacy (pre-1.6, not zip) format is refused. Errors throw
// std::runtime_error naming the file and what is wrong in it.
#include <map>
#include <string>

#include "nn/safetensors.hpp"

namespace xg::nn::torch_pickle {

// Largest data.pkl accepted: a state dict of thousands of tensors pickles to a few megabytes.
constexpr uint64_t kMaxPickleBytes = 64u << 20;

// Every tensor of the state dict, contiguous, in its stored dtype (F32, F16, BF16, I64, I32).
std::map<std::string, safetensors::Entry> read(const std::string& path);

// Every float tensor (F32/F16/BF16, as float32), by name; integer buffers are left out.
StateDict read_float_tensors(const std::string& path);

}  // namespace xg::nn::torch_pickle
