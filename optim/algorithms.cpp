// The update rules: SGD, Adam, AdamW (elementwise, one pass over all parameters) and LAMB.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "autograd/kernels/vec.hpp"
#include "autograd/parallel.hpp"
#include "optim/optimizer.hpp"

namespace xg::optim {

// ---- SGD ----
Sgd::Sgd(ParamGroups groups, float lr, SgdOptions opt) : ElementwiseOptimizer(std::move(groups), lr), opt_(opt) {
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
Adam::Adam(ParamGroups groups, float lr, AdamOptions opt) : ElementwiseOptimizer(std::move(groups), lr), opt_(opt) {
  if (!(opt_.beta1 >= 0.f && opt_.beta1 < 1.f && opt_.beta2 >= 0.f && opt_.beta2 < 1.f && opt_.eps > 0.f))
    throw std::invalid_argument(fmt::format("[adam] betas ({}, {}) must be in [0, 1) and eps {} > 0", opt_.beta1,
                                            opt_.beta2, opt_.eps));
}

Adam::BiasCorrection Adam::bias_correction(int64_t t) const {
  const double bc1 = 1.0 - std::pow(double(opt_.beta1), double(t));
  const double bc2 = 1.0 - std::pow(double(opt_.beta2), double(t));
  return {float(lr_ / bc1), float(1.0 / std::sqrt(bc2))};
}

void Adam::begin_pass() { at_step_ = bias_correction(step_); }

void Adam::adam_elements(const Span& s, float l2, float keep) const {
  const BiasCorrection c = s.step == step_ ? at_step_ : bias_correction(s.step);
  vec::adam({opt_.beta1, opt_.beta2, opt_.eps, c.step_size * s.lr_scale, c.inv_sqrt_bc2, l2, keep}, s.w, s.g,
            s.slot[0], s.slot[1], s.n);
}

void Adam::update_elements(const Span& s) const { adam_elements(s, s.weight_decay); }

nlohmann::json Adam::settings() const {
  return {{"beta1", opt_.beta1}, {"beta2", opt_.beta2}, {"eps", opt_.eps}};
}

// Decoupled decay w *= 1 - lr * wd, applied in the same pass as the Adam step (a separate pass
// over the weights was a quarter of the optimizer's memory traffic). The step's product and its
// subtraction from the decayed weight are one FMA, so w can differ from the two-pass result by
// one rounding.
void AdamW::update_elements(const Span& s) const {
  adam_elements(s, 0.f, 1.f - lr_ * s.lr_scale * s.weight_decay);
}

// ---- LAMB ----
Lamb::Lamb(ParamGroups groups, float lr, LambOptions opt) : Optimizer(std::move(groups), lr), opt_(opt) {
  if (!(opt_.beta1 >= 0.f && opt_.beta1 < 1.f && opt_.beta2 >= 0.f && opt_.beta2 < 1.f && opt_.eps > 0.f))
    throw std::invalid_argument(fmt::format("[lamb] betas ({}, {}) must be in [0, 1) and eps {} > 0", opt_.beta1,
                                            opt_.beta2, opt_.eps));
}

// Per parameter: the moments and direction r in fixed blocks on the thread pool, each block's
// sums of w^2 and r^2 added in block order (the same bits for any thread count), then
// w -= lr * (|w| / |r|) r.
void Lamb::apply(const std::vector<Span>& spans) {
  constexpr size_t kBlock = 1 << 14;
  std::vector<float> r;
  std::vector<std::array<double, 2>> sums;
  for (const Span& s : spans) {
    const double bc1 = opt_.bias_correction ? 1.0 - std::pow(double(opt_.beta1), double(s.step)) : 1.0;
    const double bc2 = opt_.bias_correction ? 1.0 - std::pow(double(opt_.beta2), double(s.step)) : 1.0;
    const vec::LambStep c{opt_.beta1, opt_.beta2, opt_.eps, float(1.0 / bc1), float(1.0 / std::sqrt(bc2)), s.weight_decay};
    const size_t blocks = (s.n + kBlock - 1) / kBlock;
    r.resize(s.n);
    sums.assign(blocks, {0.0, 0.0});
    const auto block_range = [&](size_t b) { return std::pair(b * kBlock, std::min(s.n, (b + 1) * kBlock)); };
    parallel_for(blocks, [&](size_t b) {
      const auto [lo, hi] = block_range(b);
      scale_grads(s.g + lo, hi - lo);
      vec::lamb_direction(c, s.w + lo, s.g + lo, s.slot[0] + lo, s.slot[1] + lo, r.data() + lo, hi - lo, sums[b].data());
    });
    double w_sq = 0, r_sq = 0;
    for (const auto& [w_part, r_part] : sums) w_sq += w_part, r_sq += r_part;
    const double w_norm = std::sqrt(w_sq), r_norm = std::sqrt(r_sq);
    const float trust = (s.layer_adaptation && w_norm > 0 && r_norm > 0) ? float(w_norm / r_norm) : 1.f;
    const float lr = lr_ * s.lr_scale;
    parallel_for(blocks, [&](size_t b) {
      const auto [lo, hi] = block_range(b);
      vec::axpy(-lr * trust, r.data() + lo, s.w + lo, hi - lo);
    });
  }
}

nlohmann::json Lamb::settings() const {
  return {{"beta1", opt_.beta1}, {"beta2", opt_.beta2}, {"eps", opt_.eps}, {"bias_correction", opt_.bias_correction}};
}

}  // namespace xg::optim
