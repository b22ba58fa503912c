#include "optim/optimizer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <set>

#include "autograd/parallel.hpp"
#include "util/atomic_file.hpp"
#include "util/json_input.hpp"
#include "nn/safetensors.hpp"

namespace xg::optim {

std::vector<ParamGroup> bert_param_groups(const nn::NamedTensors& params, float weight_decay) {
  ParamGroup decay{{}, weight_decay}, no_decay{{}, 0.f};
  auto ends_with = [](const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (const auto& np : params) {
    const bool skip = ends_with(np.first, "bias") || np.first.find("LayerNorm") != std::string::npos ||
                      np.first.find("layer_norm") != std::string::npos;
    (skip ? no_decay : decay).params.push_back(np);
  }
  return {decay, no_decay};
}

Optimizer::Optimizer(std::vector<ParamGroup> groups, float lr) : groups_(std::move(groups)) {
  set_lr(lr);
  // A tensor is one parameter however many names reach it (tied or shared weights): it is
  // stepped once, under its first name. The same name for two tensors is an error; frozen
  // parameters (requires_grad off) are left out.
  std::set<std::string> names;
  std::set<const TensorImpl*> seen;
  for (auto& g : groups_) {
    if (!(g.weight_decay >= 0.f))
      throw std::invalid_argument(fmt::format("[optimizer] weight_decay {} must be >= 0", g.weight_decay));
    nn::NamedTensors kept;
    for (const auto& [n, t] : g.params) {
      if (!names.insert(n).second)
        throw std::invalid_argument(fmt::format("[optimizer] parameter name '{}' appears twice", n));
      if (!t.requires_grad() || !seen.insert(t.impl().get()).second) continue;
      kept.emplace_back(n, t);
    }
    g.params = std::move(kept);
  }
}

void Optimizer::set_lr(float lr) {
  if (!(lr >= 0.f) || !std::isfinite(lr))
    throw std::invalid_argument(fmt::format("[optimizer] learning rate {} must be finite and >= 0", lr));
  lr_ = lr;
}

void Optimizer::step() {
  ++step_;
  for (auto& g : groups_)
    for (auto& [name, p] : g.params) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      update(p, grad, g.weight_decay, state_[name]);
    }
}

void Optimizer::zero_grad() {
  for (auto& g : groups_)
    for (auto& [_, p] : g.params) p.zero_grad();
}

Tensor& Optimizer::slot(std::map<std::string, Tensor>& slots, const std::string& name, const Tensor& like) {
  auto it = slots.find(name);
  if (it == slots.end()) it = slots.emplace(name, Tensor::zeros(like.shape())).first;
  return it->second;
}

nn::StateDict Optimizer::state_tensors() const {
  nn::StateDict out;
  for (const auto& [param, slots] : state_)
    for (const auto& [s, t] : slots) out[param + "." + s] = t;
  return out;
}

nlohmann::json Optimizer::state_json() const {
  return {{"optimizer", name()}, {"step", step_}, {"lr", lr_}, {"settings", settings()}};
}

void Optimizer::save_state(const std::string& prefix) const {
  nn::safetensors::write(prefix + ".safetensors", state_tensors(), {{"optimizer", name()}});
  write_text_atomically(prefix + ".json", state_json().dump(2) + "\n");
}

void Optimizer::load_state(const std::string& prefix) {
  const std::string json_path = prefix + ".json";
  std::ifstream in(json_path);
  if (!in) throw std::runtime_error(fmt::format("[optimizer] {}: cannot open", json_path));
  nlohmann::json j;
  try {
    j = parse_json_bounded(in);
    if (j.at("optimizer").get<std::string>() != name())
      throw std::runtime_error(fmt::format("[optimizer] {}: state is for '{}', this optimizer is '{}'",
                                           json_path, j.at("optimizer").get<std::string>(), name()));
    step_ = j.at("step").get<int64_t>();
    set_lr(j.at("lr").get<float>());
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("[optimizer] {}: bad state JSON ({})", json_path, e.what()));
  }
  const std::string tensors_path = prefix + ".safetensors";
  const nn::StateDict saved = nn::safetensors::read_float_tensors(tensors_path);
  std::map<std::string, Shape> params;
  for (const auto& g : groups_)
    for (const auto& [n, t] : g.params) params[n] = t.shape();
  std::map<std::string, std::map<std::string, Tensor>> state;
  for (const auto& [key, t] : saved) {
    const size_t dot = key.rfind('.');
    const std::string param = dot == std::string::npos ? key : key.substr(0, dot);
    auto it = params.find(param);
    if (dot == std::string::npos || it == params.end())
      throw std::runtime_error(fmt::format("[optimizer] {}: state '{}' belongs to no parameter of this optimizer",
                                           tensors_path, key));
    if (it->second != t.shape())
      throw std::runtime_error(fmt::format("[optimizer] {}: state '{}' has shape {}, parameter has {}",
                                           tensors_path, key, shape_str(t.shape()), shape_str(it->second)));
    state[param][key.substr(dot + 1)] = t;
  }
  state_ = std::move(state);
}

// ---- SGD ----
Sgd::Sgd(std::vector<ParamGroup> groups, float lr, SgdOptions opt) : Optimizer(std::move(groups), lr), opt_(opt) {
  if (opt_.nesterov && (opt_.momentum <= 0.f || opt_.dampening != 0.f))
    throw std::invalid_argument("[sgd] nesterov needs momentum > 0 and dampening 0");
}

void Sgd::update(Tensor& p, const Tensor& g, float wd, std::map<std::string, Tensor>& slots) {
  const size_t n = p.numel();
  float* w = p.data();
  const float* gr = g.data();
  std::vector<float> d(gr, gr + n);
  if (wd != 0.f)
    for (size_t i = 0; i < n; ++i) d[i] += wd * w[i];
  if (opt_.momentum != 0.f) {
    const bool first = !slots.count("momentum_buffer");
    float* buf = slot(slots, "momentum_buffer", p).data();
    for (size_t i = 0; i < n; ++i) buf[i] = first ? d[i] : opt_.momentum * buf[i] + (1.f - opt_.dampening) * d[i];
    for (size_t i = 0; i < n; ++i) d[i] = opt_.nesterov ? d[i] + opt_.momentum * buf[i] : buf[i];
  }
  for (size_t i = 0; i < n; ++i) w[i] -= lr_ * d[i];
}

nlohmann::json Sgd::settings() const {
  return {{"momentum", opt_.momentum}, {"dampening", opt_.dampening}, {"nesterov", opt_.nesterov}};
}

// ---- Adam / AdamW ----
Adam::Adam(std::vector<ParamGroup> groups, float lr, AdamOptions opt) : Optimizer(std::move(groups), lr), opt_(opt) {
  if (!(opt_.beta1 >= 0.f && opt_.beta1 < 1.f && opt_.beta2 >= 0.f && opt_.beta2 < 1.f && opt_.eps > 0.f))
    throw std::invalid_argument(fmt::format("[adam] betas ({}, {}) must be in [0, 1) and eps {} > 0", opt_.beta1,
                                            opt_.beta2, opt_.eps));
}

void Adam::adam_step(float* w, const float* g, float* m, float* v, size_t n, float l2) const {
  const float b1 = opt_.beta1, b2 = opt_.beta2, eps = opt_.eps;
  const double bc1 = 1.0 - std::pow(double(b1), double(step_));
  const double bc2 = 1.0 - std::pow(double(b2), double(step_));
  const float step_size = float(lr_ / bc1), inv_sqrt_bc2 = float(1.0 / std::sqrt(bc2));
  // Memory-bound: split large tensors across the threads; each chunk's loop vectorises.
  parallel_range(n, 1 << 16, [=](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const float gi = g[i] + l2 * w[i];
      m[i] = b1 * m[i] + (1.f - b1) * gi;
      v[i] = b2 * v[i] + (1.f - b2) * gi * gi;
      w[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
    }
  });
}

void Adam::update(Tensor& p, const Tensor& g, float wd, std::map<std::string, Tensor>& slots) {
  adam_step(p.data(), g.data(), slot(slots, "exp_avg", p).data(), slot(slots, "exp_avg_sq", p).data(), p.numel(), wd);
}

nlohmann::json Adam::settings() const {
  return {{"beta1", opt_.beta1}, {"beta2", opt_.beta2}, {"eps", opt_.eps}};
}

void AdamW::update(Tensor& p, const Tensor& g, float wd, std::map<std::string, Tensor>& slots) {
  float* w = p.data();
  if (wd != 0.f) {
    const float keep = 1.f - lr_ * wd;
    parallel_range(p.numel(), 1 << 15, [&](size_t i0, size_t i1) {
      for (size_t i = i0; i < i1; ++i) w[i] *= keep;
    });
  }
  adam_step(w, g.data(), slot(slots, "exp_avg", p).data(), slot(slots, "exp_avg_sq", p).data(), p.numel(), 0.f);
}

// ---- LAMB ----
Lamb::Lamb(std::vector<ParamGroup> groups, float lr, LambOptions opt) : Optimizer(std::move(groups), lr), opt_(opt) {
  if (!(opt_.beta1 >= 0.f && opt_.beta1 < 1.f && opt_.beta2 >= 0.f && opt_.beta2 < 1.f && opt_.eps > 0.f))
    throw std::invalid_argument(fmt::format("[lamb] betas ({}, {}) must be in [0, 1) and eps {} > 0", opt_.beta1,
                                            opt_.beta2, opt_.eps));
}

void Lamb::update(Tensor& p, const Tensor& g, float wd, std::map<std::string, Tensor>& slots) {
  const size_t n = p.numel();
  float *w = p.data(), *m = slot(slots, "exp_avg", p).data(), *v = slot(slots, "exp_avg_sq", p).data();
  const float b1 = opt_.beta1, b2 = opt_.beta2;
  const double bc1 = opt_.bias_correction ? 1.0 - std::pow(double(b1), double(step_)) : 1.0;
  const double bc2 = opt_.bias_correction ? 1.0 - std::pow(double(b2), double(step_)) : 1.0;
  std::vector<float> r(n);
  double w_norm = 0, r_norm = 0;
  for (size_t i = 0; i < n; ++i) {
    m[i] = b1 * m[i] + (1.f - b1) * g.data()[i];
    v[i] = b2 * v[i] + (1.f - b2) * g.data()[i] * g.data()[i];
    r[i] = float((m[i] / bc1) / (std::sqrt(v[i] / bc2) + opt_.eps)) + wd * w[i];
    w_norm += double(w[i]) * w[i];
    r_norm += double(r[i]) * r[i];
  }
  w_norm = std::sqrt(w_norm);
  r_norm = std::sqrt(r_norm);
  const float trust = (w_norm > 0 && r_norm > 0) ? float(w_norm / r_norm) : 1.f;
  for (size_t i = 0; i < n; ++i) w[i] -= lr_ * trust * r[i];
}

nlohmann::json Lamb::settings() const {
  return {{"beta1", opt_.beta1}, {"beta2", opt_.beta2}, {"eps", opt_.eps}, {"bias_correction", opt_.bias_correction}};
}

// ---- clipping and accumulation ----
namespace {
void check_max_norm(float max_norm) {
  if (!(max_norm > 0.f)) throw std::invalid_argument(fmt::format("[clip_grad_norm] max_norm {} must be > 0", max_norm));
}
// PyTorch's clip_grad_norm_ coefficient: scale only when it would shrink the gradients.
double clip_coefficient(double norm, float max_norm) { return double(max_norm) / (norm + 1e-6); }
}  // namespace

float clip_grad_norm(const std::vector<Tensor>& params, float max_norm) {
  check_max_norm(max_norm);
  std::vector<Tensor> grads;  // each tensor once, even when tied under two names
  std::set<const TensorImpl*> seen;
  for (const auto& p : params)
    if (p.grad().defined() && seen.insert(p.impl().get()).second) grads.push_back(p.grad());
  double sq = 0;
  for (const auto& g : grads)
    for (size_t i = 0, n = g.numel(); i < n; ++i) sq += double(g.data()[i]) * g.data()[i];
  const double norm = std::sqrt(sq);
  const double coef = clip_coefficient(norm, max_norm);
  if (coef < 1.0)
    for (auto& g : grads)
      for (size_t i = 0, n = g.numel(); i < n; ++i) g.data()[i] = float(g.data()[i] * coef);
  return float(norm);
}

float clip_grad_norm(nn::ParameterArena& arena, float max_norm) {
  check_max_norm(max_norm);
  const double norm = arena.grad_norm();
  const double coef = clip_coefficient(norm, max_norm);
  if (coef < 1.0) arena.scale_grads(coef);
  return float(norm);
}

GradientAccumulator::GradientAccumulator(size_t n) : n_(n) {
  if (n == 0) throw std::invalid_argument("[GradientAccumulator] needs at least one micro-batch");
}

}  // namespace xg::optim
