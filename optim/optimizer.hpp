#pragma once
// Optimizers over named parameter groups. Each parameter keeps its state (moments, momentum)
// under "<parameter name>.<slot>", so the state saves to safetensors next to the weights and
// loads back by name.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/arena.hpp"
#include "nn/module.hpp"

namespace xg::optim {

struct ParamGroup {
  nn::NamedTensors params;
  float weight_decay = 0.f;
};

// BERT's grouping: biases and LayerNorm weights get no weight decay, everything else does.
std::vector<ParamGroup> bert_param_groups(const nn::NamedTensors& params, float weight_decay);

class Optimizer {
 public:
  Optimizer(std::vector<ParamGroup> groups, float lr);
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;

  // One update from the current gradients, at the current lr; parameters without a gradient
  // are skipped. Counts the step.
  void step();
  void zero_grad();
  float lr() const { return lr_; }
  void set_lr(float lr);
  int64_t steps() const { return step_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }

  // State: tensors "<param>.<slot>" and a JSON with the optimizer name, step, lr and settings.
  nn::StateDict state_tensors() const;
  nlohmann::json state_json() const;
  // Writes <prefix>.safetensors and <prefix>.json, each atomically.
  void save_state(const std::string& prefix) const;
  // Reads them back; throws naming the file when the optimizer kind, a parameter or a shape
  // differs from this optimizer's.
  void load_state(const std::string& prefix);

 protected:
  // Updates p in place from g; `slots` is this parameter's state (created on first use).
  virtual void update(Tensor& p, const Tensor& g, float weight_decay, std::map<std::string, Tensor>& slots) = 0;
  virtual nlohmann::json settings() const = 0;
  Tensor& slot(std::map<std::string, Tensor>& slots, const std::string& name, const Tensor& like);

  std::vector<ParamGroup> groups_;
  std::map<std::string, std::map<std::string, Tensor>> state_;  // param name -> slot -> tensor
  float lr_;
  int64_t step_ = 0;
};

struct SgdOptions {
  float momentum = 0.f;
  float dampening = 0.f;
  bool nesterov = false;
};
// PyTorch's SGD: weight decay adds wd * p to the gradient; momentum buffers start at the first
// gradient.
class Sgd : public Optimizer {
 public:
  Sgd(std::vector<ParamGroup> groups, float lr, SgdOptions opt = {});
  std::string name() const override { return "sgd"; }

 protected:
  void update(Tensor& p, const Tensor& g, float wd, std::map<std::string, Tensor>& slots) override;
  nlohmann::json settings() const override;
  SgdOptions opt_;
};

struct AdamOptions {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
};
// Adam with L2 weight decay (added to the gradient), as torch.optim.Adam.
class Adam : public Optimizer {
 public:
  Adam(std::vector<ParamGroup> groups, float lr, AdamOptions opt = {});
  std::string name() const override { return "adam"; }

 protected:
  void update(Tensor& p, const Tensor& g, float wd, std::map<std::string, Tensor>& slots) override;
  nlohmann::json settings() const override;
  // The bias-corrected Adam step on raw buffers; AdamW shares it.
  void adam_step(float* p, const float* g, float* m, float* v, size_t n, float l2) const;
  AdamOptions opt_;
};

// Adam with decoupled weight decay (p -= lr * wd * p before the Adam step), as torch.optim.AdamW.
class AdamW : public Adam {
 public:
  AdamW(std::vector<ParamGroup> groups, float lr, AdamOptions opt = {}) : Adam(std::move(groups), lr, opt) {}
  std::string name() const override { return "adamw"; }

 protected:
  void update(Tensor& p, const Tensor& g, float wd, std::map<std::string, Tensor>& slots) override;
};

struct LambOptions {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-6f;
  bool bias_correction = true;
};
// LAMB (You et al. 2019), the large-batch BERT optimizer: the Adam direction plus decoupled
// weight decay, scaled per parameter tensor by the trust ratio ||p|| / ||update|| (1 when
// either norm is 0).
class Lamb : public Optimizer {
 public:
  Lamb(std::vector<ParamGroup> groups, float lr, LambOptions opt = {});
  std::string name() const override { return "lamb"; }

 protected:
  void update(Tensor& p, const Tensor& g, float wd, std::map<std::string, Tensor>& slots) override;
  nlohmann::json settings() const override;
  LambOptions opt_;
};

// Scales all gradients so their global L2 norm is at most max_norm (PyTorch's clip_grad_norm_:
// factor max_norm / (norm + 1e-6) when below 1). Returns the norm before clipping.
float clip_grad_norm(const std::vector<Tensor>& params, float max_norm);
// The same over a flat gradient arena: one pass for the norm, one for the scaling.
float clip_grad_norm(nn::ParameterArena& arena, float max_norm);

// Gradient accumulation over n micro-batches: backward() each micro-batch's mean loss times
// loss_scale(), and step the optimizer when micro_step() says so. The update equals one step on
// a batch n times larger.
class GradientAccumulator {
 public:
  explicit GradientAccumulator(size_t n);
  float loss_scale() const { return 1.f / float(n_); }
  // Call after each micro-batch's backward(); true after every n-th.
  bool micro_step() { return ++count_ % n_ == 0; }
  size_t micro_batches() const { return n_; }

 private:
  size_t n_;
  size_t count_ = 0;
};

}  // namespace xg::optim
