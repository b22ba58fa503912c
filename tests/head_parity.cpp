#include "tests/head_parity.hpp"

#include <catch2/catch.hpp>

#include "models/core/checkpoint.hpp"
#include "models/core/pretraining.hpp"
#include "tests/golden.hpp"

namespace xg::test {

HeadGolden::HeadGolden(const std::string& dir) : file(nn::safetensors::read(dir + "/goldens.safetensors")) {}

Tensor HeadGolden::f(const std::string& n) const { return nn::safetensors::to_float(file.tensors.at(n), n); }

Tensor HeadGolden::i(const std::string& n) const {
  const auto& e = file.tensors.at(n);
  return Tensor::from_ints(nn::safetensors::to_int64(e, n), e.shape);
}

Tensor HeadGolden::label(const std::string& n) const {
  return file.tensors.at(n).dtype == nn::safetensors::DType::I64 ? i(n) : f(n);
}

models::ModelInputs HeadGolden::inputs() const {
  const auto& ids = file.tensors.at("input_ids");
  if (ids.shape.size() == 3) {  // multiple choice: (B, C, T), as transformers takes them
    models::ModelInputs in{i("input_ids"), i("token_type_ids"), Tensor(), Tensor()};
    const auto mask = i("attention_mask").to_ints();
    in.attention_mask = Tensor::from_vector(std::vector<float>(mask.begin(), mask.end()), ids.shape);
    return in;
  }
  return models::make_inputs(ids.shape[0], ids.shape[1], i("input_ids").to_ints(), i("token_type_ids").to_ints(),
                             i("attention_mask").to_ints());
}

void check_head_parity(const std::string& dir, const std::string& architecture, const std::vector<std::string>& label_names,
                       const std::vector<std::string>& output_names) {
  INFO("model " << dir);
  const HeadGolden g(dir);
  models::LoadedModel loaded = models::load_pretrained(dir);
  REQUIRE(loaded.model->architecture() == architecture);
  CHECK(loaded.notes.empty());
  models::PretrainedModel& m = *loaded.model;
  m.eval();
  models::Labels labels;
  for (const auto& l : label_names) labels[l] = g.label(l);
  const models::NamedOutputs out = m.forward_named(g.inputs(), labels);
  for (const auto& o : output_names) {
    INFO(o);
    CHECK(max_scaled_error(out.at(o), g.f(o)) < 1e-4);
  }
  CHECK(out.at("loss").item() == Approx(g.f("loss").item()).epsilon(1e-5));
  out.at("loss").backward();
  size_t checked = 0;
  for (auto& [n, p] : m.named_parameters()) {
    INFO(n);
    REQUIRE(p.grad().defined());
    CHECK(max_scaled_error(p.grad(), g.f("grad." + n), kGradientFloor) < 1e-3);
    ++checked;
  }
  // every gradient the generator wrote (the rest: inputs, labels, outputs, loss)
  CHECK(checked == g.file.tensors.size() - 4 - label_names.size() - output_names.size());
  // a masked-LM pre-training model: also what bert_pretrain trains, the sparse last layer included
  auto* heads = dynamic_cast<models::PretrainingHeads*>(&m);
  if (heads && !heads->detects_replaced_tokens())
    check_pretraining_parity(m, g.inputs(), pretraining_targets(g.i("labels")), g.f("loss").item(),
                             [&](const std::string& n) { return g.f("grad." + n); });
}

}  // namespace xg::test
