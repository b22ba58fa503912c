// Sentence embeddings (mean or [CLS] pooling, L2 normalisation) against sentence-transformers'
// formulas on tests/data/bert_a's golden batch (tools/gen_pooling_goldens.py), from the
// reference's hidden states and from our own forward pass; padding, errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "models/core/checkpoint.hpp"
#include "models/core/sentence_embedding.hpp"
#include "nn/safetensors.hpp"

using namespace xg;
using namespace xg::models;
using Catch::Matchers::Contains;

namespace {
const std::string kDir = std::string(XGRAD_TEST_DATA_DIR) + "/bert_a";

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (size_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(double(a.data()[i]) - double(b.data()[i])));
  return m;
}
Tensor mask_tensor(const std::vector<int64_t>& mask, size_t B, size_t T) {
  return Tensor::from_vector(std::vector<float>(mask.begin(), mask.end()), {B, T});
}
}  // namespace

TEST_CASE("pool_sentences matches sentence-transformers on the tiny model's goldens", "[embedding]") {
  const nn::safetensors::File goldens = nn::safetensors::read(kDir + "/goldens.safetensors");
  const nn::safetensors::File pooled = nn::safetensors::read(kDir + "/pooling_goldens.safetensors");
  auto f = [](const nn::safetensors::File& file, const std::string& n) { return nn::safetensors::to_float(file.tensors.at(n), n); };
  const auto& ids = goldens.tensors.at("input_ids");
  const size_t B = ids.shape[0], T = ids.shape[1];
  const std::vector<int64_t> mask = nn::safetensors::to_int64(goldens.tensors.at("attention_mask"), "attention_mask");
  REQUIRE(std::count(mask.begin(), mask.end(), 0) > 0);  // the batch has padding to leave out

  // Pooling alone, from the reference's hidden states.
  const Tensor reference_hidden = f(goldens, "last_hidden_state");
  for (const auto& [pooling, name] : {std::pair{Pooling::Mean, "mean"}, std::pair{Pooling::Cls, "cls"}}) {
    INFO(name);
    CHECK(max_abs_diff(pool_sentences(reference_hidden, mask_tensor(mask, B, T), pooling, false), f(pooled, name)) < 1e-6);
    CHECK(max_abs_diff(pool_sentences(reference_hidden, mask_tensor(mask, B, T), pooling, true),
                       f(pooled, std::string(name) + "_normalized")) < 1e-6);
  }

  // Our forward pass, then pooling: what bert_infer embed --pooling mean --normalize prints.
  const LoadedModel loaded = load_pretrained(kDir);
  loaded.model->eval();  // no dropout
  const ModelInputs in = make_inputs(B, T, nn::safetensors::to_int64(ids, "input_ids"),
                                     nn::safetensors::to_int64(goldens.tensors.at("token_type_ids"), "token_type_ids"), mask);
  NoGradGuard no_grad;
  const Tensor hidden = loaded.model->base_model().forward_named(in).at("last_hidden_state");
  const Tensor embeddings = pool_sentences(hidden, in.attention_mask, Pooling::Mean, true);
  CHECK(max_abs_diff(embeddings, f(pooled, "mean_normalized")) < 1e-5);
  for (size_t b = 0; b < B; ++b) {
    double norm = 0;
    for (size_t i = 0; i < embeddings.size(1); ++i) norm += double(embeddings.data()[b * embeddings.size(1) + i]) * embeddings.data()[b * embeddings.size(1) + i];
    CHECK(std::sqrt(norm) == Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("pool_sentences: no mask means every token, an all-padding row gives zeros, bad shapes throw", "[embedding]") {
  const Tensor h = Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  const Tensor all = pool_sentences(h, Tensor(), Pooling::Mean, false);
  CHECK(all.to_vector() == std::vector<float>{2, 3, 6, 7});
  const Tensor padded = pool_sentences(h, Tensor::from_vector({1, 0, 0, 0}, {2, 2}), Pooling::Mean, true);
  CHECK(padded.to_vector()[0] == Approx(1 / std::sqrt(5.0)));
  CHECK(padded.to_vector()[2] == 0.f);  // sentence-transformers clamps the count: 0 / 1e-9, not NaN
  CHECK(padded.to_vector()[3] == 0.f);
  CHECK(pool_sentences(h, Tensor(), Pooling::Cls, false).to_vector() == std::vector<float>{1, 2, 5, 6});
  CHECK_THROWS_WITH(pool_sentences(Tensor::zeros({2, 2}), Tensor(), Pooling::Mean, false), Contains("[pool_sentences] hidden states of shape"));
  CHECK_THROWS_WITH(pool_sentences(h, Tensor::zeros({2, 3}), Pooling::Mean, false), Contains("attention mask of shape"));
  CHECK_THROWS_WITH(pooling_from_name("max"), Contains("unknown pooling 'max'"));
}
