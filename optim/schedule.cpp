#include "optim/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "util/json_input.hpp"

namespace xg::optim {

LrSchedule LrSchedule::constant(float lr, int64_t warmup) { return {Kind::Constant, lr, warmup, 0, 0.f, 1.f}; }
LrSchedule LrSchedule::linear(float lr, int64_t warmup, int64_t total) { return {Kind::Linear, lr, warmup, total, 0.f, 1.f}; }
LrSchedule LrSchedule::cosine(float lr, int64_t warmup, int64_t total) { return {Kind::Cosine, lr, warmup, total, 0.f, 1.f}; }
LrSchedule LrSchedule::polynomial(float lr, int64_t warmup, int64_t total, float end, float p) {
  return {Kind::Polynomial, lr, warmup, total, end, p};
}
LrSchedule LrSchedule::inverse_sqrt(float lr, int64_t warmup) { return {Kind::InverseSqrt, lr, warmup, 0, 0.f, 1.f}; }

LrSchedule::Kind LrSchedule::kind_from_name(const std::string& n) {
  for (Kind k : {Kind::Constant, Kind::Linear, Kind::Cosine, Kind::Polynomial, Kind::InverseSqrt})
    if (kind_name(k) == n) return k;
  throw std::invalid_argument(fmt::format(
      "[LrSchedule] unknown schedule '{}' (known: constant, linear, cosine, polynomial, inverse_sqrt)", n));
}

std::string LrSchedule::kind_name(Kind k) {
  switch (k) {
    case Kind::Constant: return "constant";
    case Kind::Linear: return "linear";
    case Kind::Cosine: return "cosine";
    case Kind::Polynomial: return "polynomial";
    case Kind::InverseSqrt: return "inverse_sqrt";
  }
  return "constant";
}

void LrSchedule::validate() const {
  if (!(base_lr >= 0.f) || !std::isfinite(base_lr))
    throw std::invalid_argument(fmt::format("[LrSchedule] learning rate {} must be finite and >= 0", base_lr));
  if (warmup_steps < 0) throw std::invalid_argument(fmt::format("[LrSchedule] warmup_steps {} < 0", warmup_steps));
  const bool decays = kind == Kind::Linear || kind == Kind::Cosine || kind == Kind::Polynomial;
  if (decays && total_steps <= warmup_steps)
    throw std::invalid_argument(fmt::format(
        "[LrSchedule] {} decay needs total_steps ({}) > warmup_steps ({})", kind_name(kind), total_steps, warmup_steps));
}

float LrSchedule::at(int64_t step) const {
  // HF's convention: the k-th update (0-based) during warm-up uses k / warmup of the rate.
  if (step < warmup_steps) return base_lr * float(step) / float(std::max<int64_t>(1, warmup_steps));
  const double progress = total_steps > warmup_steps
                              ? double(step - warmup_steps) / double(total_steps - warmup_steps)
                              : 0.0;
  switch (kind) {
    case Kind::Constant: return base_lr;
    case Kind::Linear: return float(base_lr * std::max(0.0, 1.0 - progress));
    case Kind::Cosine:
      return float(base_lr * 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, progress))));
    case Kind::Polynomial:
      if (step >= total_steps) return end_lr;
      return float((base_lr - end_lr) * std::pow(1.0 - progress, double(power)) + end_lr);
    case Kind::InverseSqrt: {
      // transformers' get_inverse_sqrt_schedule: timescale = warm-up, or 10,000 without one (not
      // 1, which would divide the rate by sqrt(step) from the first step)
      const double warmup = double(std::max<int64_t>(0, warmup_steps)), timescale = warmup > 0 ? warmup : 10000.0;
      return float(base_lr / std::sqrt((double(step) + timescale - warmup) / timescale));
    }
  }
  return base_lr;
}

nlohmann::json LrSchedule::to_json() const {
  return {{"kind", kind_name(kind)}, {"base_lr", base_lr}, {"warmup_steps", warmup_steps},
          {"total_steps", total_steps}, {"end_lr", end_lr}, {"power", power}};
}

LrSchedule LrSchedule::from_json(const nlohmann::json& j) {
  LrSchedule s;
  try {
    s.kind = kind_from_name(j.at("kind").get<std::string>());
    s.base_lr = j.at("base_lr").get<float>();
    s.warmup_steps = json_integer<int64_t>(j.at("warmup_steps"), "warmup_steps");
    s.total_steps = json_integer<int64_t>(j.at("total_steps"), "total_steps");
    s.end_lr = j.at("end_lr").get<float>();
    s.power = j.at("power").get<float>();
  } catch (const std::exception& e) {  // a missing or mistyped field; an unknown kind
    throw std::invalid_argument(fmt::format("[LrSchedule] bad schedule JSON: {}", e.what()));
  }
  s.validate();
  return s;
}

}  // namespace xg::optim
