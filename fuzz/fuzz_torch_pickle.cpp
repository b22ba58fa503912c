// PyTorch zip checkpoints (pytorch_model.bin): the whole file through torch_pickle::read, and the
// same bytes as a bare pickle through the restricted unpickler (the archive's CRC-32 would
// otherwise turn away almost every mutation of a pickle before the unpickler sees it).
#include <stdexcept>
#include <vector>

#include "fuzz/fuzz_input.hpp"
#include "nn/restricted_unpickler.hpp"
#include "nn/torch_pickle.hpp"

using namespace xg::nn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = xg::fuzz::write_input("pytorch_model.bin", data, size);
  try {
    torch_pickle::read(path);
  } catch (const std::runtime_error&) {  // a refused file is the expected outcome
  }
  try {
    pickle::unpickle(std::vector<uint8_t>(data, data + size), path);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
