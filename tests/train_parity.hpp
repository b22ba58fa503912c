#pragma once
// Replaying tools/gen_train_goldens.py: the same optimizer steps as transformers + torch, checked
// step for step (loss, gradient norm before clipping) and by the weights after the last step.
#include <functional>
#include <string>

#include "models/core/pretrained.hpp"
#include "optim/optimizer.hpp"
#include "tests/golden.hpp"

namespace xg::test {

// 6 steps alternating batches ".0" and ".1" of `g` (labels by `labels(suffix)`), clipping to
// norm 1, AdamW (`adam`, decay 0.01 but not on biases and LayerNorm), linear schedule at 3e-3
// with 2 warm-up steps; the model's dropout off. Returns the largest scaled weight error.
double check_training_steps(models::PretrainedModel& m, const SafetensorsGolden& g, const optim::AdamOptions& adam,
                            const std::function<models::Labels(const std::string& suffix)>& labels);

}  // namespace xg::test
