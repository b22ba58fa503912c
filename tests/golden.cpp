#include "tests/golden.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

#include "nn/safetensors.hpp"

namespace xg::test {

models::PretrainingTargets pretraining_targets(const Tensor& labels, const Tensor& sentence_labels) {
  std::vector<int64_t> positions, ids;
  const std::vector<int64_t> all = labels.to_ints();
  for (size_t k = 0; k < all.size(); ++k)
    if (all[k] != -100) {
      positions.push_back(int64_t(k));
      ids.push_back(all[k]);
    }
  return models::make_pretraining_targets(positions, ids,
                                          sentence_labels.defined() ? sentence_labels.to_ints() : std::vector<int64_t>{});
}

double check_pretraining_parity(models::PretrainedModel& m, const models::ModelInputs& in,
                                const models::PretrainingTargets& t, float golden_loss,
                                const std::function<Tensor(const std::string&)>& golden_grad) {
  auto* heads = dynamic_cast<models::PretrainingHeads*>(&m);
  REQUIRE(heads);
  m.zero_grad();
  const models::PretrainingOutput out = heads->forward_pretraining(in, t);
  CHECK(out.loss.item() == Approx(golden_loss).epsilon(1e-5));
  out.loss.backward();
  double worst = 0;
  for (auto& [n, p] : m.named_parameters()) {
    INFO("forward_pretraining, " << n);
    REQUIRE(p.grad().defined());
    const double e = max_scaled_error(p.grad(), golden_grad(n), kGradientFloor);
    CHECK(e < 1e-3);
    worst = std::max(worst, e);
  }
  return worst;
}

nlohmann::json load_golden(const std::string& name) {
  const std::string path = std::string(XGRAD_TEST_DATA_DIR) + "/" + name;
  std::ifstream in(path);
  INFO("golden file " << path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

Tensor golden_tensor(const nlohmann::json& j, bool requires_grad) {
  Shape shape = j.at("shape").get<Shape>();
  return Tensor::from_vector(j.at("data").get<std::vector<float>>(), shape, requires_grad);
}

const Tensor& nn_golden(const std::string& name) {
  static const auto all =
      nn::safetensors::read_float_tensors(std::string(XGRAD_TEST_DATA_DIR) + "/nn_goldens.safetensors");
  auto it = all.find(name);
  INFO("golden tensor " << name);
  REQUIRE(it != all.end());
  return it->second;
}

double max_scaled_error(const Tensor& a, const Tensor& b, double floor) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();  // either may be a view
  double err = 0, scale = floor;
  for (size_t i = 0; i < va.size(); ++i) {
    err = std::max(err, std::fabs(double(va[i]) - vb[i]));
    scale = std::max(scale, std::fabs(double(vb[i])));
  }
  return err / scale;
}

double max_scaled_error_real(const Tensor& a, const Tensor& b, const Tensor& attention_mask) {
  REQUIRE(a.shape() == b.shape());
  if (!attention_mask.defined()) return max_scaled_error(a, b);
  const std::vector<float> va = a.to_vector(), vb = b.to_vector(), mask = attention_mask.to_vector();
  REQUIRE(mask.size() > 0);
  REQUIRE(va.size() % mask.size() == 0);
  const size_t per_position = va.size() / mask.size();
  double err = 0, scale = 1;
  for (size_t i = 0; i < va.size(); ++i) {
    if (mask[i / per_position] == 0.f) continue;
    err = std::max(err, std::fabs(double(va[i]) - vb[i]));
    scale = std::max(scale, std::fabs(double(vb[i])));
  }
  return err / scale;
}

}  // namespace xg::test
