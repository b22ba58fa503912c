// A pre-training shard (create_pretraining_data's output): the header, then every record.
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "text/pretraining_data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = xg::fuzz::write_input("shard_00000.bin", data, size);
  try {
    xg::text::ShardReader r(path);
    for (size_t i = 0; i < r.size(); ++i) {
      try {
        r.get(i);
      } catch (const std::runtime_error&) {  // a bad record: go on to the next
      }
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
