#pragma once
// A pickle reader that executes nothing: it understands the opcodes torch.save's pickles use
// (protocols 2 to 5) and exactly the globals PyTorch's tensor rebuilding needs, and builds plain
// objects from them. Any other opcode or global throws, naming the file, the opcode or the
// global and its byte position. Objects live in one arena and refer to each other by index, so
// no input (cycles through the memo, deep nesting) can overflow the stack or leak.
#include <cstdint>
#include <string>
#include <vector>

#include "nn/safetensors.hpp"

namespace xg::nn::pickle {

struct Object {
  enum class Kind { None, Bool, Int, Float, String, Tuple, List, Dict, Global, Storage, Tensor };
  Kind kind = Kind::None;
  int64_t i = 0;       // Bool, Int; Storage: element count; Tensor: storage offset
  double f = 0;        // Float
  std::string s;       // String; Global: "module.name"; Storage: its key (archive/data/<key>)
  std::vector<size_t> items;  // Tuple, List; Dict: key, value, key, value...; Tensor: {storage}
  safetensors::DType dtype = safetensors::DType::F32;  // Storage
  std::vector<int64_t> sizes, strides;                  // Tensor
};

struct Unpickled {
  std::vector<Object> objects;
  size_t root = 0;
};

// Objects one pickle may create: far more than a state dict of thousands of tensors needs.
constexpr size_t kMaxObjects = size_t(1) << 21;

// Runs `bytes` (the pickle of `file`, named in errors) through the restricted machine.
Unpickled unpickle(const std::vector<uint8_t>& bytes, const std::string& file);

}  // namespace xg::nn::pickle
