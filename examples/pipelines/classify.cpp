// Classifies each argument with a fine-tuned sequence classifier (bert_finetune's OUT/best, or any
// *ForSequenceClassification checkpoint): its two most likely labels with their probabilities.
//   pipeline_classify MODEL_DIR "a fine phone" "the battery died in a day"
#include <cstdio>

#include "inference/pipeline.hpp"

int main(int argc, char** argv) try {
  if (argc < 3) return std::fprintf(stderr, "usage: %s MODEL_DIR TEXT...\n", argv[0]), 2;
  const auto classifier = xg::inference::Pipeline::load(argv[1]);
  for (int i = 2; i < argc; ++i) {
    std::printf("%s\n", argv[i]);
    for (const auto& [label, score] : classifier.classify(argv[i], /*top_k=*/2)) std::printf("  %s %.4f\n", label.c_str(), score);
  }
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
