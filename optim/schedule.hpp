#pragma once
// Learning-rate schedules as pure functions of the step, so a run resumed at step k uses exactly
// the rate an uninterrupted run would. `at(k)` is the rate for the k-th update (0-based).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace xg::optim {

struct LrSchedule {
  enum class Kind { Constant, Linear, Cosine, Polynomial, InverseSqrt };
  Kind kind = Kind::Constant;
  float base_lr = 1e-4f;
  int64_t warmup_steps = 0;  // linear ramp from 0 over these steps (all kinds)
  int64_t total_steps = 0;   // end of the decay (Linear, Cosine, Polynomial)
  float end_lr = 0.f;        // Polynomial: the rate reached at total_steps
  float power = 1.f;         // Polynomial: the decay exponent

  // BERT's: warm-up, then linear decay to zero at total_steps.
  static LrSchedule constant(float lr, int64_t warmup = 0);
  static LrSchedule linear(float lr, int64_t warmup, int64_t total);
  static LrSchedule cosine(float lr, int64_t warmup, int64_t total);
  static LrSchedule polynomial(float lr, int64_t warmup, int64_t total, float end_lr = 0.f, float power = 1.f);
  // Warm-up, then lr * sqrt(warmup / step) (the original Transformer's decay); without warm-up
  // lr / sqrt((step + 10000) / 10000), as transformers' get_inverse_sqrt_schedule.
  static LrSchedule inverse_sqrt(float lr, int64_t warmup);
  // Parses "constant", "linear", "cosine", "polynomial", "inverse_sqrt".
  static Kind kind_from_name(const std::string& name);
  static std::string kind_name(Kind k);

  float at(int64_t step) const;
  // Throws naming the field when the settings are inconsistent (negative steps, no decay span).
  void validate() const;
  nlohmann::json to_json() const;
  static LrSchedule from_json(const nlohmann::json& j);
};

}  // namespace xg::optim
