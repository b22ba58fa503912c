// Answers a question from a context with a question-answering model (bert_finetune --task squad
// or squad_v2's OUT/best): the span, where it is in the context, its probability.
//   pipeline_answer MODEL_DIR "How long does the crossing take?" "The crossing takes fifty minutes."
#include <cstdio>

#include "inference/pipeline.hpp"

int main(int argc, char** argv) try {
  if (argc != 4) return std::fprintf(stderr, "usage: %s MODEL_DIR QUESTION CONTEXT\n", argv[0]), 2;
  const auto reader = xg::inference::Pipeline::load(argv[1]);
  xg::text::SquadDecodeOptions decode;
  decode.version_2 = true;  // the answer may be "": the context does not say
  const auto a = reader.answer(argv[2], argv[3], decode);
  std::printf("answer: \"%s\" [%zu, %zu) probability %.4f\n", a.text.c_str(), a.start, a.end, a.probability);
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
