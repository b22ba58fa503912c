// A whole .safetensors file (model weights, optimizer state, bert_infer dump --inputs): read it,
// then convert every tensor as the loaders do.
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "nn/safetensors.hpp"

using namespace xg::nn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = xg::fuzz::write_input("model.safetensors", data, size);
  try {
    const safetensors::File f = safetensors::read(path);
    for (const auto& [name, e] : f.tensors) {
      if (e.dtype == safetensors::DType::I64 || e.dtype == safetensors::DType::I32) safetensors::to_int64(e, name);
      else safetensors::to_float(e, name);
    }
  } catch (const std::runtime_error&) {  // a refused file is the expected outcome
  }
  return 0;
}
