#pragma once
// Module: the base of every layer and model, after the PyTorch C++ frontend. Parameters, buffers
// and sub-modules are registered by name; named_parameters() walks them in registration order
// with dotted names ("encoder.layer.0.attention.self.query.weight"), which match Hugging Face
// checkpoints so weights move between the two unchanged.
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/xgrad.hpp"
#include "nn/execution.hpp"

namespace xg::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using StateDict = std::map<std::string, Tensor>;

// What load_state_dict found. Non-strict loads copy what matches and report the rest.
struct LoadReport {
  std::vector<std::string> missing;     // in the module, not in the dict
  std::vector<std::string> unexpected;  // in the dict, not in the module
  std::vector<std::string> mismatched;  // "name: checkpoint [a, b] vs module [c, d]"
  bool ok() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
  std::string str() const;
};

class ParameterArena;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Each parameter once, under the first name it is reachable by (a tied or shared tensor is
  // one parameter); all_names lists every name, duplicates included, as state_dict does.
  NamedTensors named_parameters(bool all_names = false) const;
  std::vector<Tensor> parameters() const;
  NamedTensors named_buffers() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const {
    return children_;
  }
  size_t num_parameters() const;

  // Training mode, propagated to every sub-module (dropout reads it).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Which implementations this module's forward takes (nn/execution.hpp); set_execution sets them
  // on every sub-module too.
  const ExecutionOptions& execution() const { return execution_; }
  void set_execution(const ExecutionOptions& options);
  // Drops every parameter's gradient (once flattened, the arena's zero_grad: no pass over the
  // gradient block).
  void zero_grad();
  // Freezes (off) or unfreezes (on) every parameter of this module and its descendants:
  // frozen parameters get no gradient and optimizers leave them alone.
  void requires_grad_(bool on);
  // Moves every parameter into one flat block and their gradients into another (see
  // nn/arena.hpp); call once, after construction and before building an optimizer. Returns the
  // arena, which this module keeps.
  ParameterArena& flatten_parameters();
  // The arena after flatten_parameters(), else null.
  ParameterArena* arena() const { return arena_.get(); }
  // Calls fn on this module and then on every descendant, depth first.
  void apply(const std::function<void(Module&)>& fn);

  // Parameters and buffers by dotted name; the tensors share this module's storage.
  StateDict state_dict() const;
  // Copies matching tensors into the existing parameters and buffers. Strict: any missing,
  // unexpected or mismatched name throws, listing all of them, before anything is copied.
  LoadReport load_state_dict(const StateDict& state, bool strict = true);

 protected:
  // Registers and returns the parameter (requires_grad set); keep the returned handle.
  Tensor register_parameter(const std::string& name, Tensor t);
  Tensor register_buffer(const std::string& name, Tensor t);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    check_name(name);
    if (!m) throw std::invalid_argument("[Module] sub-module '" + name + "' is null: construct it before registering it");
    children_.emplace_back(name, m);
    return m;
  }
  // Puts `m` where the sub-module `name` was (sharing one module between models: the caller also
  // repoints its own handle to it); throws when there is no such sub-module.
  void replace_module(const std::string& name, std::shared_ptr<Module> m);

 private:
  void check_name(const std::string& name) const;
  void collect(const std::string& prefix, NamedTensors& out, bool buffers) const;

  NamedTensors params_, buffers_;
  std::shared_ptr<ParameterArena> arena_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
  ExecutionOptions execution_ = default_execution();
};

// A module with one tensor in and one out, so it can sit in a Sequential.
class UnaryModule : public Module {
 public:
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
};

// Sub-modules named "0", "1", ... in order.
template <class M = Module>
class ModuleList : public Module {
 public:
  void push_back(std::shared_ptr<M> m) {
    items_.push_back(register_module(std::to_string(items_.size()), std::move(m)));
  }
  size_t size() const { return items_.size(); }
  M& operator[](size_t i) { return *items_.at(i); }
  const M& operator[](size_t i) const { return *items_.at(i); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

// Applies its modules in order.
class Sequential : public UnaryModule {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<UnaryModule>> layers) {
    for (auto& l : layers) push_back(std::move(l));
  }
  void push_back(std::shared_ptr<UnaryModule> m) {
    layers_.push_back(register_module(std::to_string(layers_.size()), std::move(m)));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (auto& l : layers_) h = l->forward(h);
    return h;
  }
  size_t size() const { return layers_.size(); }

 private:
  std::vector<std::shared_ptr<UnaryModule>> layers_;
};

}  // namespace xg::nn
