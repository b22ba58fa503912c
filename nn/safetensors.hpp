#pragma once
// The safetensors format (Hugging Face): 8-byte little-endian header length N, N bytes of JSON
// header {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
// "__metadata__": {"k": "v"}}, then the raw little-endian data. Every header is validated
// before it is trusted: size limits, known dtypes, integer shapes, offsets inside the data,
// contiguous without overlap or holes, byte length = numel x dtype size. Errors throw
// std::runtime_error naming the file and the tensor.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.hpp"

namespace xg::nn::safetensors {

enum class DType { F32, F16, BF16, I64, I32 };
const char* dtype_name(DType d);
size_t dtype_size(DType d);
bool is_float(DType d);  // F32, F16 or BF16

struct Entry {
  DType dtype;
  Shape shape;
  std::vector<uint8_t> bytes;  // raw little-endian data
};

struct File {
  std::map<std::string, Entry> tensors;
  std::map<std::string, std::string> metadata;
};

// Largest header accepted (Hugging Face's own limit).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

File read(const std::string& path);

// F32, F16 or BF16 -> float32 tensor; integer dtypes throw (use to_int64).
Tensor to_float(const Entry& e, const std::string& name);
// I64 or I32 -> int64 values.
std::vector<int64_t> to_int64(const Entry& e, const std::string& name);

// Writes float32 tensors as F32 and int64 ones as I64 (any strides), atomically: to a temporary
// file in the same folder, flushed to disk, then renamed over `path`, so a crash never leaves a
// half-written file. Another dtype or an undefined tensor throws naming the file and the tensor.
void write(const std::string& path, const StateDict& tensors,
           const std::map<std::string, std::string>& metadata = {});
// Writes integer tensors (I64) alongside float ones; used for model inputs.
void write(const std::string& path, const StateDict& tensors,
           const std::map<std::string, std::pair<Shape, std::vector<int64_t>>>& int_tensors,
           const std::map<std::string, std::string>& metadata);

// Every float tensor of the file (F32/F16/BF16), by name.
StateDict read_float_tensors(const std::string& path);

// The index of the first NaN or infinite element of `t` (in row-major order), or nothing: a value
// no checkpoint should hold, since loading it would make every later output NaN.
std::optional<size_t> first_nonfinite(const Tensor& t);
// Every tensor: F32/F16/BF16 as float32, I64/I32 as int64.
StateDict read_tensors(const std::string& path);

// Module checkpoints: parameters and buffers, float32 or int64.
void save(const Module& m, const std::string& path);
LoadReport load(Module& m, const std::string& path, bool strict = true);

}  // namespace xg::nn::safetensors
