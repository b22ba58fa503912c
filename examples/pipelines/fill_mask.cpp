// Fills each mask token of a text with a language model (bert_pretrain's checkpoints, or any
// *ForMaskedLM / *ForPreTraining checkpoint): the five most likely tokens per mask.
//   pipeline_fill_mask MODEL_DIR "the [MASK] of the whale"
#include <cstdio>

#include "inference/pipeline.hpp"

int main(int argc, char** argv) try {
  if (argc != 3) return std::fprintf(stderr, "usage: %s MODEL_DIR TEXT\n", argv[0]), 2;
  const auto model = xg::inference::Pipeline::load(argv[1]);
  for (const auto& candidates : model.fill_mask(argv[2], /*top_k=*/5)) {
    std::printf("mask at token %zu:\n", candidates.front().position);
    for (const auto& c : candidates) std::printf("  %.4f %-12s %s\n", c.score, c.token.c_str(), c.sequence.c_str());
  }
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
