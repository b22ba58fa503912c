// Trains a small model with the nn API and AdamW, saves and reloads it, then classifies with a
// checkpoint through the pipeline API: what a user of the installed package does.
//   consumer CLASSIFIER_DIR VOCAB_FILE
#include <cstdio>
#include <filesystem>

#include "inference/pipeline.hpp"
#include "nn/nn.hpp"
#include "optim/optim.hpp"
#include "util/version.hpp"

using namespace xg;

struct Net : nn::Module {
  std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(2, 16));
  std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(16, 1));
  Tensor forward(const Tensor& x) { return fc2->forward(tanh(fc1->forward(x))); }
};

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  // y = x0 * x1 on four points
  const Tensor x = Tensor::from_vector({-1, -1, -1, 1, 1, -1, 1, 1}, {4, 2});
  const Tensor y = Tensor::from_vector({1, -1, -1, 1}, {4, 1});
  Net net;
  optim::AdamW adam(net.parameters(), 0.05f);
  float first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    adam.zero_grad();
    Tensor loss = mse_loss(net.forward(x), y);
    loss.backward();
    adam.step();
    (step == 0 ? first : last) = loss.item();
  }
  std::printf("xgrad %s: loss %.4f -> %.4f\n", XGRAD_VERSION, first, last);
  if (!(last < first * 0.1f)) return 1;

  const std::string saved = (std::filesystem::temp_directory_path() / "xgrad_consumer.safetensors").string();
  nn::safetensors::save(net, saved);
  Net again;
  nn::safetensors::load(again, saved);
  std::filesystem::remove(saved);
  NoGradGuard no_grad;
  if (again.forward(x).to_vector() != net.forward(x).to_vector()) return 1;
  std::printf("saved and reloaded: same outputs\n");

  inference::PipelineOptions options;
  options.tokenizer = argv[2];
  const auto classifier = inference::Pipeline::load(argv[1], options);
  for (const auto& [label, score] : classifier.classify("the cat sat on the mat", 2)) std::printf("%s %.4f\n", label.c_str(), score);
  return 0;
}
