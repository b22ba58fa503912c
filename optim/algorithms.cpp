// The update rules: SGD, Adam, AdamW (elementwise, one pass over all parameters) and LAMB.
#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "autograd/kernels/vec.hpp"
#include "optim/optimizer.hpp"

namespace xg::optim {

// ---- SGD ----
Sgd::Sgd(std::vector<ParamGroup> groups, float lr, SgdOptions opt) : ElementwiseOptimizer(std::move(groups), lr), opt_(opt) {
  if (opt_.nesterov && (opt_.momentum <= 0.f || opt_.dampening != 0.f))
    throw std::invalid_argument("[sgd] nesterov needs momentum > 0 and dampening 0");
}

std::vector<std::string> Sgd::slot_names() const {
  if (opt_.momentum == 0.f) return {};
  return {"momentum_buffer"};
}

void Sgd::update_elements(const Span& s) const {
  const float lr = lr_ * s.lr_scale, mom = opt_.momentum, damp = opt_.dampening;
  float* buf = s.slot[0];
  for (size_t i = 0; i < s.n; ++i) {
    float d = s.g[i] + s.weight_decay * s.w[i];
    if (buf) {  // momentum buffers start at the first gradient
      buf[i] = s.fresh ? d : mom * buf[i] + (1.f - damp) * d;
      d = opt_.nesterov ? d + mom * buf[i] : buf[i];
    }
    s.w[i] -= lr * d;
  }
}

nlohmann::json Sgd::settings() const {
  return {{"momentum", opt_.momentum}, {"dampening", opt_.dampening}, {"nesterov", opt_.nesterov}};
}

// ---- Adam / AdamW ----
Adam::Adam(std::vector<ParamGroup> groups, float lr, AdamOptions opt) : ElementwiseOptimizer(std::move(groups), lr), opt_(opt) {
  if (!(opt_.beta1 >= 0.f && opt_.beta1 < 1.f && opt_.beta2 >= 0.f && opt_.beta2 < 1.f && opt_.eps > 0.f))
    throw std::invalid_argument(fmt::format("[adam] betas ({}, {}) must be in [0, 1) and eps {} > 0", opt_.beta1,
                                            opt_.beta2, opt_.eps));
}

void Adam::begin_pass() {
  const double bc1 = 1.0 - std::pow(double(opt_.beta1), double(step_));
  const double bc2 = 1.0 - std::pow(double(opt_.beta2), double(step_));
  step_size_ = float(lr_ / bc1);
  inv_sqrt_bc2_ = float(1.0 / std::sqrt(bc2));
}

void Adam::adam_elements(float* w, const float* g, float* m, float* v, size_t n, float l2, float lr_scale,
                         float keep) const {
  vec::adam({opt_.beta1, opt_.beta2, opt_.eps, step_size_ * lr_scale, inv_sqrt_bc2_, l2, keep}, w, g, m, v, n);
}

void Adam::update_elements(const Span& s) const {
  adam_elements(s.w, s.g, s.slot[0], s.slot[1], s.n, s.weight_decay, s.lr_scale);
}

nlohmann::json Adam::settings() const {
  return {{"beta1", opt_.beta1}, {"beta2", opt_.beta2}, {"eps", opt_.eps}};
}

// Decoupled decay w *= 1 - lr * wd, applied in the same pass as the Adam step (a separate pass
// over the weights was a quarter of the optimizer's memory traffic). The step's product and its
// subtraction from the decayed weight are one FMA, so w can differ from the two-pass result by
// one rounding.
void AdamW::update_elements(const Span& s) const {
  adam_elements(s.w, s.g, s.slot[0], s.slot[1], s.n, 0.f, s.lr_scale, 1.f - lr_ * s.lr_scale * s.weight_decay);
}

// ---- LAMB ----
Lamb::Lamb(std::vector<ParamGroup> groups, float lr, LambOptions opt) : Optimizer(std::move(groups), lr), opt_(opt) {
  if (!(opt_.beta1 >= 0.f && opt_.beta1 < 1.f && opt_.beta2 >= 0.f && opt_.beta2 < 1.f && opt_.eps > 0.f))
    throw std::invalid_argument(fmt::format("[lamb] betas ({}, {}) must be in [0, 1) and eps {} > 0", opt_.beta1,
                                            opt_.beta2, opt_.eps));
}

void Lamb::apply(const std::vector<Span>& spans) {
  const float b1 = opt_.beta1, b2 = opt_.beta2;
  const double bc1 = opt_.bias_correction ? 1.0 - std::pow(double(b1), double(step_)) : 1.0;
  const double bc2 = opt_.bias_correction ? 1.0 - std::pow(double(b2), double(step_)) : 1.0;
  std::vector<float> r;
  for (const Span& s : spans) {
    float *w = s.w, *m = s.slot[0], *v = s.slot[1];
    const float* g = s.g;
    r.resize(s.n);
    double w_norm = 0, r_norm = 0;
    for (size_t i = 0; i < s.n; ++i) {
      m[i] = b1 * m[i] + (1.f - b1) * g[i];
      v[i] = b2 * v[i] + (1.f - b2) * g[i] * g[i];
      r[i] = float((m[i] / bc1) / (std::sqrt(v[i] / bc2) + opt_.eps)) + s.weight_decay * w[i];
      w_norm += double(w[i]) * w[i];
      r_norm += double(r[i]) * r[i];
    }
    w_norm = std::sqrt(w_norm);
    r_norm = std::sqrt(r_norm);
    const float trust = (w_norm > 0 && r_norm > 0) ? float(w_norm / r_norm) : 1.f;
    const float lr = lr_ * s.lr_scale;
    for (size_t i = 0; i < s.n; ++i) w[i] -= lr * trust * r[i];
  }
}

nlohmann::json Lamb::settings() const {
  return {{"beta1", opt_.beta1}, {"beta2", opt_.beta2}, {"eps", opt_.eps}, {"bias_correction", opt_.bias_correction}};
}

}  // namespace xg::optim
