// Sentence embeddings as sentence-transformers computes them for all-MiniLM-L6-v2 (mean over
// tokens, unit length), and the cosine similarity of every pair of arguments.
//   pipeline_embed MODEL_DIR "a man is eating food" "a man eats" "the sky is blue"
#include <cstdio>
#include <string>
#include <vector>

#include "inference/pipeline.hpp"

int main(int argc, char** argv) try {
  if (argc < 3) return std::fprintf(stderr, "usage: %s MODEL_DIR TEXT...\n", argv[0]), 2;
  const auto encoder = xg::inference::Pipeline::load(argv[1]);
  const std::vector<std::string> texts(argv + 2, argv + argc);
  const auto vectors = encoder.embed(texts, xg::models::Pooling::Mean, /*normalize=*/true);
  std::printf("%zu vectors of %zu numbers\n", vectors.size(), vectors.front().size());
  for (size_t a = 0; a < texts.size(); ++a)
    for (size_t b = a + 1; b < texts.size(); ++b) {
      double cosine = 0;  // unit vectors: the dot product
      for (size_t i = 0; i < vectors[a].size(); ++i) cosine += double(vectors[a][i]) * vectors[b][i];
      std::printf("%.4f  \"%s\" / \"%s\"\n", cosine, texts[a].c_str(), texts[b].c_str());
    }
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
