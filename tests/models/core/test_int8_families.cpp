// Every architecture of every registered family at INT8: nn::InferenceWeights quantizes each of
// its linear layers (heads, ALBERT's shared layers and embedding projection, ELECTRA's projection
// included), and every output stays near fp32's.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/precision.hpp"
#include "models/core/registry.hpp"
#include "nn/packed_weights.hpp"
#include "util/random.hpp"

using namespace xg;

namespace {

double cosine(const Tensor& a_in, const Tensor& b_in) {
  const Tensor a = a_in.contiguous(), b = b_in.contiguous();
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.numel(); ++i) {
    dot += double(a.data()[i]) * b.data()[i];
    aa += double(a.data()[i]) * a.data()[i];
    bb += double(b.data()[i]) * b.data()[i];
  }
  return aa == 0 && bb == 0 ? 1.0 : dot / std::sqrt(aa * bb);
}

}  // namespace

TEST_CASE("every family's every architecture runs its linear layers int8 at INT8 and stays near fp32", "[int8][registry]") {
  size_t checked = 0;
  for (const std::string& type : models::registered_model_types())
    for (const std::string& arch : models::registered_architectures(type)) {
      if (arch.find("MultipleChoice") != std::string::npos) continue;  // (B, choices, T) inputs: below
      nlohmann::json config = models::preset_config(type, "tiny");
      auto model = models::build_model(config, "test", arch);
      model->eval();
      Generator g(3);
      const size_t B = 2, T = 12, vocab = config.at("vocab_size").get<size_t>();
      std::vector<int64_t> ids(B * T);
      for (auto& id : ids) id = int64_t(5 + g.below(vocab - 5));
      std::vector<float> mask(B * T, 1.f);
      for (size_t t = 8; t < T; ++t) mask[T + t] = 0.f;
      models::ModelInputs in;
      in.input_ids = Tensor::from_ints(ids, {B, T});
      in.attention_mask = Tensor::from_vector(mask, {B, T});
      NoGradGuard no_grad;
      const models::NamedOutputs fp32 = model->forward_named(in);
      MatmulPrecisionGuard int8(MatmulPrecision::INT8);
      nn::InferenceWeights packed(*model, MatmulPrecision::INT8);
      size_t linears = 0;
      model->apply([&](nn::Module& m) {
        if (auto* lin = dynamic_cast<nn::Linear*>(&m)) {
          INFO(arch << ": a Linear of " << lin->weight.size(0) << " x " << lin->weight.size(1));
          CHECK(lin->packed_weight != nullptr);
          ++linears;
        }
      });
      const models::NamedOutputs quantized = model->forward_named(in);
      for (const auto& [name, value] : fp32) {
        if (value.dtype() != Dtype::Float32 || value.numel() < 4) continue;
        INFO(arch << " output " << name << ", " << linears << " linear layers");
        REQUIRE(quantized.count(name));
        CHECK(cosine(quantized.at(name), value) > 0.99);
      }
      ++checked;
    }
  CHECK(checked >= 16);
}
