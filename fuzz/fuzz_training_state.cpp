// training_state.json of a checkpoint, as --resume reads it.
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "training/checkpoints.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  xg::fuzz::write_input("training_state.json", data, size);
  try {
    xg::training::TrainingState::read(xg::fuzz::scratch_dir());
  } catch (const std::runtime_error&) {
  }
  return 0;
}
