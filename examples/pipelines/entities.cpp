// Finds the named entities in each argument with a token classifier (bert_finetune --task ner's
// OUT/best): type, text, character span and score.
//   pipeline_entities MODEL_DIR "John Smith visited Paris on Monday ."
#include <cstdio>

#include "inference/pipeline.hpp"

int main(int argc, char** argv) try {
  if (argc < 3) return std::fprintf(stderr, "usage: %s MODEL_DIR TEXT...\n", argv[0]), 2;
  const auto tagger = xg::inference::Pipeline::load(argv[1]);
  for (int i = 2; i < argc; ++i) {
    std::printf("%s\n", argv[i]);
    for (const auto& e : tagger.entities(argv[i]))
      std::printf("  %-5s %-20s [%zu, %zu) %.4f\n", e.type.c_str(), e.text.c_str(), e.start, e.end, e.score);
  }
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
