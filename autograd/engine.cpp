#include "autograd/engine.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <unordered_map>

#include "autograd/kernels/vec.hpp"

namespace xg {

namespace {
thread_local bool t_grad_enabled = true;

// Moves out of `node` every input edge that nobody else holds, so that dropping the node does
// not recurse into its producers; the harvested producers are handled by the caller's loop.
void harvest_edges(Node& node, std::vector<std::shared_ptr<Node>>& pending) {
  for (auto& in : node.inputs)
    if (in.node && in.node.use_count() == 1) pending.push_back(std::move(in.node));
  node.inputs.clear();
  node.backward = nullptr;
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

Tensor record(const char* name, Tensor output, const std::vector<Tensor>& inputs, BackwardFn fn) {
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
  auto impl = output.impl();
  impl->grad_fn = std::move(node);
  impl->requires_grad = true;
  return output;
}

namespace {
// Reverse post-order of the nodes reachable from root, by an explicit-stack DFS.
std::vector<std::shared_ptr<Node>> topological_order(const std::shared_ptr<Node>& root) {
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
      const auto& producer = node->inputs[next++].node;
      if (producer && !visited[producer.get()]) {
        visited[producer.get()] = true;
        owner[producer.get()] = producer;
        stack.push_back({producer.get(), 0});
      }
    } else {
      post.push_back(owner[node]);
      stack.pop_back();
    }
  }
  return std::vector<std::shared_ptr<Node>>(post.rbegin(), post.rend());
}

// Sum of two gradients without touching either (the first may alias another tensor's data).
Tensor add_grads(const Tensor& a, const Tensor& b) {
  Tensor out = Tensor::empty(a.shape());
  vec::add(a.data(), b.data(), out.data(), a.numel());
  return out;
}

void accumulate_leaf(TensorImpl& leaf, const Tensor& g) {
  if (!leaf.grad) {
    // A gradient nobody else holds (e.g. an embedding's dense gradient) is adopted, not copied.
    const bool sole_owner = g.impl().use_count() <= 2 && g.impl()->storage.use_count() == 1;
    leaf.grad = sole_owner ? g.detach().impl() : g.clone().impl();
  } else {
    vec::add(leaf.grad->storage->data(), g.data(), leaf.grad->storage->data(), g.numel());
  }
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
  if (!root.grad_fn()) {  // backward on a leaf: its gradient is grad_output
    accumulate_leaf(*root.impl(), grad_output);
    return;
  }
  const auto order = topological_order(root.grad_fn());
  std::unordered_map<Node*, Tensor> grads;
  grads[root.grad_fn().get()] = grad_output;
  for (const auto& node : order) {
    auto it = grads.find(node.get());
    if (it == grads.end()) continue;  // no gradient flows here
    Tensor g = std::move(it->second);
    grads.erase(it);
    if (node->released)
      throw std::logic_error(fmt::format(
          "[backward] the graph through '{}' was freed by an earlier backward(); "
          "call backward(retain_graph=true) the first time",
          node->name));
    std::vector<Tensor> input_grads = node->backward(g);
    if (input_grads.size() != node->inputs.size())
      throw std::logic_error(fmt::format("[backward] '{}' returned {} gradients for {} inputs",
                                         node->name, input_grads.size(), node->inputs.size()));
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const Edge& in = node->inputs[i];
      const Tensor& gi = input_grads[i];
      if (!in.active() || !gi.defined()) continue;
      if (gi.shape() != in.shape)
        throw std::logic_error(fmt::format("[backward] '{}' gave gradient {} for input {} of shape {}",
                                           node->name, shape_str(gi.shape()), i,
                                           shape_str(in.shape)));
      if (in.node) {
        auto [slot, inserted] = grads.try_emplace(in.node.get(), gi);
        if (!inserted) slot->second = add_grads(slot->second, gi);
      } else {
        accumulate_leaf(*in.leaf, gi);
      }
    }
    if (!retain_graph) {
      node->backward = nullptr;
      node->released = true;
    }
  }
}

}  // namespace xg
