// optimizer.json of a checkpoint, as --resume reads it into an AdamW over one parameter (the
// safetensors beside it is absent: a JSON that passes its checks ends at the missing file).
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "optim/optim.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const xg::Tensor weight = xg::Tensor::zeros({2, 3});
  xg::optim::AdamW adamw({{{{"w", weight}}, 0.01f}}, 1e-3f);
  xg::fuzz::write_input("optimizer.json", data, size);
  try {
    adamw.load_state(xg::fuzz::scratch_dir() + "/optimizer");
  } catch (const std::runtime_error&) {
  }
  return 0;
}
