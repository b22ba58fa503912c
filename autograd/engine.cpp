#include "autograd/engine.hpp"


#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "autograd/kernels/vec.hpp"
#include "autograd/ops/broadcast.hpp"
#include "autograd/parallel.hpp"
#include "autograd/precision.hpp"

namespace xg {

namespace {
thread_local bool t_grad_enabled = true;
// Nesting of run_backward (a checkpoint's backward runs one inside another): hooks of leaves
// reached by a nested pass wait for the outermost pass to finish.
thread_local int t_backward_depth = 0;
thread_local std::vector<std::shared_ptr<TensorImpl>> t_nested_hook_leaves;

// Moves out of `node` every input edge that nobody else holds, so that dropping the node does
// not recurse into its producers; the harvested producers are handled by the caller's loop.
void harvest_edges(Node& node, std::vector<std::shared_ptr<Node>>& pending) {
  for (auto& in : node.inputs)
    if (in.node && in.node.use_count() == 1) pending.push_back(std::move(in.node));
  node.inputs.clear();
  node.backward = nullptr;
  node.backward_into = nullptr;
}
}  // namespace

Node::~Node() {
  std::vector<std::shared_ptr<Node>> pending;
  harvest_edges(*this, pending);
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    harvest_edges(*n, pending);
  }  // each n dies here with no edges left, so its destructor is shallow
}

bool grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }
EnableGradGuard::EnableGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = true; }
EnableGradGuard::~EnableGradGuard() { t_grad_enabled = previous_; }

void accept_strided_grad(const Tensor& output) {
  if (output.defined() && output.grad_fn()) output.grad_fn()->strided_grad_ok = true;
}

namespace {
std::atomic<bool> g_detect_anomaly{false};

// Throws naming `op` and `where` when `t` (float32) holds a NaN or an infinity.
void check_finite(const Tensor& t, const std::string& op, const std::string& where) {
  if (!t.defined() || t.dtype() != Dtype::Float32) return;
  const Tensor packed = t.is_contiguous() ? t : t.clone();
  const float* p = packed.data();
  for (size_t i = 0; i < packed.numel(); ++i)
    if (!std::isfinite(p[i]))
      throw std::runtime_error(fmt::format("[anomaly] '{}' produced {} in {} (shape {}, element {}): the first non-finite value "
                                           "of this pass", op, p[i], where, shape_str(t.shape()), i));
}
}  // namespace

void set_detect_anomaly(bool on) { g_detect_anomaly = on; }
bool detect_anomaly() { return g_detect_anomaly; }

Tensor record_into(const char* name, Tensor output, const std::vector<Tensor>& inputs, const std::vector<Tensor>& saved,
                   BackwardIntoFn fn) {
  output = record(name, std::move(output), inputs, saved, nullptr);
  if (output.grad_fn()) output.grad_fn()->backward_into = std::move(fn);
  return output;
}

Tensor record(const char* name, Tensor output, const std::vector<Tensor>& inputs, BackwardFn fn) {
  return record(name, std::move(output), inputs, {}, std::move(fn));
}

Tensor record(const char* name, Tensor output, const std::vector<Tensor>& inputs, const std::vector<Tensor>& saved,
              BackwardFn fn) {
  if (g_detect_anomaly) check_finite(output, name, "its output");
  if (!t_grad_enabled) return output;
  bool any = false;
  for (const auto& t : inputs) any = any || (t.defined() && t.requires_grad());
  if (!any) return output;
  auto node = std::make_shared<Node>();
  node->name = name;
  node->backward = std::move(fn);
  node->inputs.reserve(inputs.size());
  for (const auto& t : inputs) {
    Edge e;
    if (t.defined() && t.requires_grad()) {
      e.shape = t.shape();
      if (t.grad_fn())
        e.node = t.grad_fn();
      else
        e.leaf = t.impl();
    }
    node->inputs.push_back(std::move(e));
  }
  for (const auto& t : saved)
    if (t.defined()) node->saved.push_back({t.impl()->storage, t.version(), t.shape()});
  auto impl = output.impl();
  impl->grad_fn = std::move(node);
  impl->requires_grad = true;
  return output;
}

namespace {
struct GraphInfo {
  std::vector<std::shared_ptr<Node>> order;  // reverse post-order: consumers before producers
  std::unordered_map<TensorImpl*, size_t> leaf_uses;  // edges into each leaf
  bool reenters = false;                              // a node runs a nested backward
};

// Reverse post-order of the nodes reachable from root, by an explicit-stack DFS.
GraphInfo topological_order(const std::shared_ptr<Node>& root) {
  GraphInfo info;
  std::vector<std::shared_ptr<Node>> post;
  std::unordered_map<Node*, bool> visited;
  std::vector<std::pair<Node*, size_t>> stack;  // node, next input to visit
  std::unordered_map<Node*, std::shared_ptr<Node>> owner;
  stack.push_back({root.get(), 0});
  visited[root.get()] = true;
  owner[root.get()] = root;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      const Edge& edge = node->inputs[next++];
      if (edge.leaf) ++info.leaf_uses[edge.leaf.get()];
      const auto& producer = edge.node;
      if (producer && !visited[producer.get()]) {
        visited[producer.get()] = true;
        owner[producer.get()] = producer;
        stack.push_back({producer.get(), 0});
      }
    } else {
      info.reenters = info.reenters || node->reenters_backward;
      post.push_back(owner[node]);
      stack.pop_back();
    }
  }
  info.order.assign(post.rbegin(), post.rend());
  return info;
}

Tensor packed_float(const Tensor& t) {
  const Tensor c = t.is_contiguous() ? t : t.clone();
  return c.dtype() == Dtype::Float32 ? c : c.to(Dtype::Float32);
}

// out = a + b on the thread pool (a residual stream's gradient is batch x seq x hidden floats).
void add_in_parallel(const float* a, const float* b, float* out, size_t n) {
  parallel_elements(n, [&](size_t i0, size_t i1) { vec::add(a + i0, b + i0, out + i0, i1 - i0); });
}

// Sum of two gradients without touching either (the first may alias another tensor's data).
Tensor add_grads(const Tensor& a, const Tensor& b) {
  const Tensor pa = packed_float(a), pb = packed_float(b);
  Tensor out = Tensor::empty(a.shape());
  add_in_parallel(pa.data(), pb.data(), out.data(), a.numel());
  return a.dtype() == Dtype::Float32 ? out : out.to(a.dtype());
}

// A gradient a backward or the engine may add to in place.
bool adds_in_place(const std::shared_ptr<TensorImpl>& grad) {
  return grad && grad->dtype == Dtype::Float32 && Tensor(grad).is_contiguous();
}

void accumulate_leaf(TensorImpl& leaf, const Tensor& g) {
  if (!leaf.grad && leaf.grad_slot) {  // first contribution into the arena: a copy, no allocation
    leaf.grad_slot_written = true;  // before the write, as gradient_into does
    Tensor slot(leaf.grad_slot);
    detail::copy_into(slot, g.dtype() == slot.dtype() ? g : g.to(slot.dtype()));
    leaf.grad = leaf.grad_slot;
  } else if (!leaf.grad) {
    // A packed gradient nobody else holds (a leaf with no arena slot) is adopted, not copied.
    const bool sole_owner = g.impl().use_count() <= 2 && g.impl()->storage.use_count() == 1;
    const bool adoptable = sole_owner && g.is_contiguous() && g.dtype() == leaf.dtype;
    leaf.grad = adoptable ? g.detach().impl() : g.to(leaf.dtype).clone().impl();
  } else if (adds_in_place(leaf.grad)) {
    // In place, so a gradient living in a flat arena stays there.
    float* dst = Tensor(leaf.grad).data();
    add_in_parallel(dst, packed_float(g).data(), dst, g.numel());
  } else {
    Tensor sum = add_grads(Tensor(leaf.grad), g);
    Tensor dst(leaf.grad);
    detail::copy_into(dst, sum);
  }
}

// Where a backward may write `leaf`'s gradient in place (see GradInto): its gradient when that is
// float32 and contiguous, else its arena slot (zeroed when `zero`); undefined when neither.
GradInto gradient_into(TensorImpl& leaf, bool zero) {
  if (leaf.grad) return adds_in_place(leaf.grad) ? GradInto{Tensor(leaf.grad), false} : GradInto{};
  if (!adds_in_place(leaf.grad_slot)) return {};
  leaf.grad_slot_written = true;  // from now on, even if the backward throws halfway
  Tensor slot(leaf.grad_slot);
  if (zero) fill_in_parallel(slot.data(), slot.numel(), 0.f);
  return {slot, !zero};
}

// The in-place destinations of `node`'s inputs. A leaf feeding two of its inputs gets a zeroed
// slot: the backward may write either input's gradient first.
std::vector<GradInto> gradients_into(const Node& node) {
  std::vector<GradInto> into(node.inputs.size());
  for (size_t i = 0; i < into.size(); ++i) {
    const auto& leaf = node.inputs[i].leaf;
    if (!leaf) continue;
    const bool shared = std::count_if(node.inputs.begin(), node.inputs.end(),
                                      [&](const Edge& e) { return e.leaf == leaf; }) > 1;
    into[i] = gradient_into(*leaf, shared);
  }
  return into;
}

// Throws when a tensor `node`'s backward reads was changed in place after the op ran.
void check_saved_versions(const Node& node) {
  for (const SavedVersion& s : node.saved) {
    const auto storage = s.storage.lock();
    if (storage && storage->version != s.version)
      throw std::logic_error(fmt::format(
          "[backward] '{}' saved a tensor of shape {} for its backward, and it was changed in place after the op ran "
          "(version {}, was {}): change it after backward(), or give the op a clone()",
          node.name, shape_str(s.shape), storage->version, s.version));
  }
}

void run_hooks(TensorImpl& leaf) {
  if (leaf.grad_hooks.empty() || !leaf.grad) return;
  const Tensor grad(leaf.grad);
  for (const auto& hook : leaf.grad_hooks) hook(grad);
}
}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph) {
  if (!root.requires_grad())
    throw std::logic_error("[backward] tensor does not require grad and has no grad_fn");
  if (grad_output.shape() != root.shape())
    throw std::invalid_argument(fmt::format("[backward] grad_output shape {} != output shape {}",
                                            shape_str(grad_output.shape()),
                                            shape_str(root.shape())));
  NoGradGuard no_grad;
  if (!root.grad_fn()) {  // backward on a leaf: its gradient is a copy of grad_output
    accumulate_leaf(*root.impl(), grad_output.clone());  // not the caller's tensor, adopted
    run_hooks(*root.impl());
    return;
  }
  struct DepthGuard {
    DepthGuard() { ++t_backward_depth; }
    ~DepthGuard() { --t_backward_depth; }
  } depth;
  const bool nested = t_backward_depth > 1;
  if (!nested) t_nested_hook_leaves.clear();
  GraphInfo info = topological_order(root.grad_fn());
  const auto& order = info.order;
  std::vector<TensorImpl*> deferred_hooks;  // leaves whose hooks wait for the end of the pass
  std::unordered_map<Node*, Tensor> grads;
  grads[root.grad_fn().get()] = grad_output;
  // A leaf's hooks run once its last contribution is in (or at the end of the pass).
  const auto leaf_added = [&](const std::shared_ptr<TensorImpl>& leaf) {
    if (--info.leaf_uses[leaf.get()] == 0 && !leaf->grad_hooks.empty()) {
      if (nested) t_nested_hook_leaves.push_back(leaf);
      else if (info.reenters) deferred_hooks.push_back(leaf.get());
      else run_hooks(*leaf);
    }
  };
  const auto release = [retain_graph](Node& node) {
    if (retain_graph) return;
    node.backward = nullptr;
    node.backward_into = nullptr;
    node.saved.clear();
    node.released = true;
  };
  for (const auto& node : order) {
    auto it = grads.find(node.get());
    if (it == grads.end()) {  // no gradient flows here: nor to its leaves, whose hooks may be due
      for (const Edge& in : node->inputs)
        if (in.active() && !in.node) leaf_added(in.leaf);
      continue;
    }
    Tensor g = std::move(it->second);
    grads.erase(it);
    if (!node->strided_grad_ok && !g.is_contiguous()) g = g.clone();
    if (node->released)
      throw std::logic_error(fmt::format(
          "[backward] the graph through '{}' was freed by an earlier backward(); "
          "call backward(retain_graph=true) the first time",
          node->name));
    check_saved_versions(*node);
    std::vector<GradInto> into;
    if (node->backward_into)
      into = g_detect_anomaly ? std::vector<GradInto>(node->inputs.size()) : gradients_into(*node);
    std::vector<Tensor> input_grads = node->backward_into ? node->backward_into(g, into) : node->backward(g);
    if (input_grads.size() != node->inputs.size())
      throw std::logic_error(fmt::format("[backward] '{}' returned {} gradients for {} inputs",
                                         node->name, input_grads.size(), node->inputs.size()));
    for (size_t i = 0; i < into.size(); ++i) {  // written in place: the slot is the gradient now
      const auto& leaf = node->inputs[i].leaf;
      if (!into[i].dst.defined() || input_grads[i].defined()) continue;
      if (!leaf->grad) leaf->grad = leaf->grad_slot;
      leaf_added(leaf);
    }
    if (g_detect_anomaly)
      for (size_t i = 0; i < input_grads.size(); ++i)
        check_finite(input_grads[i], node->name + " backward", fmt::format("the gradient of input {}", i));
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const Edge& in = node->inputs[i];
      const Tensor& gi = input_grads[i];
      if (!in.active()) continue;
      if (!gi.defined()) {  // none along this edge (unless written in place, counted above)
        if (!in.node && !(i < into.size() && into[i].dst.defined())) leaf_added(in.leaf);
        continue;
      }
      if (gi.shape() != in.shape)
        throw std::logic_error(fmt::format("[backward] '{}' gave gradient {} for input {} of shape {}",
                                           node->name, shape_str(gi.shape()), i,
                                           shape_str(in.shape)));
      if (in.node) {
        auto [slot, inserted] = grads.try_emplace(in.node.get(), gi);
        if (!inserted) slot->second = add_grads(slot->second, gi);
      } else {
        accumulate_leaf(*in.leaf, gi);
        leaf_added(in.leaf);
      }
    }
    release(*node);
  }
  if (nested) return;
  for (const auto& leaf : t_nested_hook_leaves)
    if (std::find(deferred_hooks.begin(), deferred_hooks.end(), leaf.get()) == deferred_hooks.end())
      deferred_hooks.push_back(leaf.get());
  for (TensorImpl* leaf : deferred_hooks) run_hooks(*leaf);
  t_nested_hook_leaves.clear();
}

Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                  const std::vector<Tensor>& inputs, const std::vector<Tensor>& params) {
  const Generator::State rng = default_generator().state();
  Tensor out;
  {
    NoGradGuard no_grad;
    GradPrecisionGuard as_recomputed;  // the recompute runs with gradients on
    out = fn(inputs).detach();
  }
  std::vector<Tensor> edges = inputs;  // params are edges too, so the node exists for them
  edges.insert(edges.end(), params.begin(), params.end());
  const size_t n_params = params.size();
  out = record("checkpoint", out, edges, edges, [fn, inputs, rng, n_params](const Tensor& g) -> std::vector<Tensor> {
    // Fresh leaves standing for the inputs, so the nested pass stops at them.
    std::vector<Tensor> leaves;
    for (const Tensor& t : inputs) {
      Tensor leaf = t.defined() ? t.detach() : Tensor();
      if (t.defined() && t.requires_grad()) leaf.requires_grad_(true);
      leaves.push_back(leaf);
    }
    const Generator::State after = default_generator().state();
    default_generator().set_state(rng);
    Tensor recomputed;
    {
      EnableGradGuard enable;
      recomputed = fn(leaves);
    }
    default_generator().set_state(after);
    if (recomputed.requires_grad()) run_backward(recomputed, g, false);
    std::vector<Tensor> out_grads;
    for (const Tensor& leaf : leaves) out_grads.push_back(leaf.defined() ? leaf.grad() : Tensor());
    out_grads.resize(out_grads.size() + n_params);  // the nested pass already accumulated them
    return out_grads;
  });
  if (out.grad_fn()) out.grad_fn()->reenters_backward = true;
  return out;
}

}  // namespace xg
