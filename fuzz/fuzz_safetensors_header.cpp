// The JSON header of a .safetensors file: the input is the header text; the target adds the
// 8-byte length before it and 64 data bytes after it, so the fuzzer spends its time on the JSON
// (nesting, dtypes, shapes, offsets) rather than on finding a matching length prefix.
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "nn/safetensors.hpp"

using namespace xg::nn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[size_t(i)] = char(uint64_t(size) >> (8 * i));
  file.append(reinterpret_cast<const char*>(data), size);
  static const uint8_t kData[64] = {0, 0, 128, 63, 0, 0, 0, 64, 1, 0, 0, 0, 0, 0, 0, 0, 0, 60, 0, 128, 255, 127, 1, 0};
  const std::string path = xg::fuzz::write_input("header.safetensors", reinterpret_cast<const uint8_t*>(file.data()),
                                                 file.size(), kData, sizeof kData);
  try {
    const safetensors::File f = safetensors::read(path);
    for (const auto& [name, e] : f.tensors) {
      if (e.dtype == safetensors::DType::I64 || e.dtype == safetensors::DType::I32) safetensors::to_int64(e, name);
      else safetensors::to_float(e, name);
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
