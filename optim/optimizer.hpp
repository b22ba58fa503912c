#pragma once
// Optimizers over named parameter groups. Each parameter keeps its state (moments, momentum)
// under "<parameter name>.<slot>", so the state saves to safetensors next to the weights and
// loads back by name.
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/arena.hpp"
#include "nn/module.hpp"

namespace xg::optim {

struct ParamGroup {
  nn::NamedTensors params;
  float weight_decay = 0.f;
  float lr_scale = 1.f;  // the group's rate is lr * lr_scale (layer-wise decay in fine-tuning)
  // LAMB: scale each parameter's update by its trust ratio |w| / |r|. Off for the no-decay group
  // (biases, LayerNorm), as ALBERT's LAMB (exclude_from_layer_adaptation) and NVIDIA's do.
  bool layer_adaptation = true;
};

// What an optimizer steps: parameter groups, or one group (no weight decay) of a model's
// parameters, as PyTorch's optimizers take them: model.named_parameters() (state saved under
// their names) or model.parameters() (named by position, "0", "1", ..., as PyTorch's optimizer
// state_dict numbers them).
struct ParamGroups {
  std::vector<ParamGroup> groups;
  ParamGroups(std::vector<ParamGroup> g) : groups(std::move(g)) {}
  ParamGroups(std::initializer_list<ParamGroup> g) : groups(g) {}
  ParamGroups(nn::NamedTensors params);
  ParamGroups(const std::vector<Tensor>& params);
};

// BERT's grouping: biases and LayerNorm weights (by name, as transformers groups them, and any
// parameter of fewer than 2 dimensions, so a norm named otherwise in a model of one's own) get no
// weight decay (nor LAMB's layer adaptation); matrices and embedding tables do.
std::vector<ParamGroup> bert_param_groups(const nn::NamedTensors& params, float weight_decay);

class Optimizer {
 public:
  Optimizer(ParamGroups groups, float lr);
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;

  // Keeps the state in flat blocks laid out as the arena's parameter block (one per state slot,
  // each parameter's slot a view at its arena offset), so one update pass walks parameters,
  // gradients and state in memory order, and the state is one buffer to shard or cast later.
  // Call before the first step() or load_state(); every parameter must live in `arena`.
  void bind(const nn::ParameterArena& arena);

  // One update from the current gradients, at the current lr; parameters without a gradient
  // are skipped. Counts the step, and each updated parameter's own count (Adam's and LAMB's bias
  // corrections use it, as PyTorch's per-parameter state['step']: a head that sat out steps
  // starts its moments as a fresh optimizer would). A grad_scale other than 1 (gradient clipping's coefficient)
  // first scales each gradient in place as clip_grad_norm does, float(g * grad_scale), a piece at
  // a time just before the update reads it: the gradients cross memory once, not three times.
  // It must be in (0, 1]. A subclass overriding apply() calls scale_grads on what it reads.
  void step(double grad_scale = 1.0);
  void zero_grad();
  float lr() const { return lr_; }
  void set_lr(float lr);
  int64_t steps() const { return step_; }
  // How many updates parameter `name` has had (0 before its first).
  int64_t parameter_steps(const std::string& name) const;
  const std::vector<ParamGroup>& groups() const { return groups_; }

  // State: tensors "<param>.<slot>" and a JSON with the optimizer name, step, lr, settings and
  // "parameter_steps", the counts that differ from step (state saved before the counts existed
  // loads with every parameter at step, the count its updates used).
  nn::StateDict state_tensors() const;
  nlohmann::json state_json() const;
  // Writes <prefix>.safetensors and <prefix>.json, each atomically.
  void save_state(const std::string& prefix) const;
  // Reads them back; throws naming the file when the optimizer kind, a parameter or a shape
  // differs from this optimizer's (and then leaves the state as it was).
  void load_state(const std::string& prefix);

 protected:
  static constexpr size_t kMaxSlots = 2;
  // One parameter's share of an update: raw pointers to its weights, gradient and state slots
  // (in slot_names() order).
  struct Span {
    float* w;
    float* g;
    float* slot[kMaxSlots];
    size_t n;
    float weight_decay;
    float lr_scale;
    bool layer_adaptation;
    bool fresh;    // its state was created for this step (zeros)
    int64_t step;  // the parameter's own update count, this update included
  };
  // The state each parameter keeps, e.g. {"exp_avg", "exp_avg_sq"}.
  virtual std::vector<std::string> slot_names() const = 0;
  // Applies the update to every span of this step (ordered by address, so a bound optimizer
  // walks its flat blocks front to back), each piece's gradients scaled first by
  // scale_grads(g, n).
  virtual void apply(const std::vector<Span>& spans) = 0;
  // g[i] = float(g[i] * this step's grad_scale), as clip_grad_norm scales; nothing at scale 1.
  void scale_grads(float* g, size_t n) const;
  virtual nlohmann::json settings() const = 0;

  std::vector<ParamGroup> groups_;
  std::map<std::string, std::map<std::string, Tensor>> state_;  // param name -> slot -> tensor
  float lr_;
  int64_t step_ = 0;
  std::map<std::string, int64_t> parameter_steps_;  // updates per parameter name; absent: none
  double grad_scale_ = 1.0;  // this step's

 private:
  // The slot's tensor for parameter p, created as zeros (in the flat block when bound).
  Tensor& slot(std::map<std::string, Tensor>& slots, const std::string& name, const Tensor& p);

  std::unordered_map<const TensorImpl*, size_t> arena_offsets_;  // empty unless bound
  size_t arena_numel_ = 0;
  std::map<std::string, std::shared_ptr<Storage>> flat_slots_;  // slot name -> block
};

// An optimizer whose update of each element reads only that element: the whole step is one
// parallel pass over all spans together, split evenly across threads whatever the tensor sizes.
class ElementwiseOptimizer : public Optimizer {
 public:
  using Optimizer::Optimizer;

 protected:
  void apply(const std::vector<Span>& spans) final;
  // Per-step scalars (bias corrections) before the pass.
  virtual void begin_pass() {}
  // Updates n elements; `s` is the span advanced to the chunk's first element.
  virtual void update_elements(const Span& s) const = 0;
};

struct SgdOptions {
  float momentum = 0.f;
  float dampening = 0.f;
  bool nesterov = false;
};
// PyTorch's SGD: weight decay adds wd * p to the gradient; momentum buffers start at the first
// gradient.
class Sgd : public ElementwiseOptimizer {
 public:
  Sgd(ParamGroups groups, float lr, SgdOptions opt = {});
  std::string name() const override { return "sgd"; }

 protected:
  std::vector<std::string> slot_names() const override;
  void update_elements(const Span& s) const override;
  nlohmann::json settings() const override;
  SgdOptions opt_;
};

struct AdamOptions {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
};
// Adam with L2 weight decay (added to the gradient), as torch.optim.Adam.
class Adam : public ElementwiseOptimizer {
 public:
  Adam(ParamGroups groups, float lr, AdamOptions opt = {});
  std::string name() const override { return "adam"; }

 protected:
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void begin_pass() override;
  void update_elements(const Span& s) const override;
  nlohmann::json settings() const override;
  struct BiasCorrection {
    float step_size, inv_sqrt_bc2;  // lr / (1 - beta1^t), 1 / sqrt(1 - beta2^t)
  };
  BiasCorrection bias_correction(int64_t t) const;
  // The bias-corrected Adam step on n elements at lr * lr_scale, weight decay added to the
  // gradient as L2 (AdamW passes 0 and its decoupled decay as keep).
  // keep: a decoupled decay factor for w before the step (AdamW), 1 for none.
  void adam_elements(const Span& s, float l2, float keep = 1.f) const;
  AdamOptions opt_;
  BiasCorrection at_step_{};  // at the global step, which nearly every parameter shares
};

// Adam with decoupled weight decay (p -= lr * wd * p before the Adam step), as torch.optim.AdamW.
class AdamW : public Adam {
 public:
  AdamW(ParamGroups groups, float lr, AdamOptions opt = {}) : Adam(std::move(groups), lr, opt) {}
  std::string name() const override { return "adamw"; }

 protected:
  void update_elements(const Span& s) const override;
};

struct LambOptions {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-6f;
  bool bias_correction = true;
};
// LAMB (You et al. 2019), the large-batch BERT optimizer: the Adam direction plus decoupled
// weight decay, scaled per parameter tensor by the trust ratio ||p|| / ||update|| (1 when
// either norm is 0). Not elementwise: each tensor needs its norms first.
class Lamb : public Optimizer {
 public:
  Lamb(ParamGroups groups, float lr, LambOptions opt = {});
  std::string name() const override { return "lamb"; }

 protected:
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void apply(const std::vector<Span>& spans) override;
  nlohmann::json settings() const override;
  LambOptions opt_;
};

// The factor clip_grad_norm scales gradients of global L2 norm `norm` by: max_norm / (norm + 1e-6)
// where that is below 1, else 1. With a finite norm, Optimizer::step(clip_scale(arena.grad_norm(),
// max_norm)) clips inside the update pass, with the same bits as clip_grad_norm then step(); an
// infinite one gives 0, which step() refuses (clip_grad_norm would write zeros or NaNs).
double clip_scale(double norm, float max_norm);
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
