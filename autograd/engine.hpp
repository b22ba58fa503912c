#pragma once
// The tape: each op that runs with grad enabled on an input that requires grad records a Node
// holding its inputs (the graph edges) and a backward closure. The closure captures only
// detached tensors, so a saved tensor never forms a cycle with the node that saves it.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"

namespace xg {

// Given the gradient of the op's output, returns one gradient per input (undefined where the
// input is not differentiable). Runs with grad mode off.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

// Where an input's gradient goes: the node that produced it, or the leaf that accumulates it.
// Edges hold nodes, not tensors, so intermediate activations die with their last handle.
struct Edge {
  std::shared_ptr<Node> node;
  std::shared_ptr<TensorImpl> leaf;
  Shape shape;
  bool active() const { return node || leaf; }
};

struct Node {
  std::string name;           // the op, for error messages
  std::vector<Edge> inputs;   // one per op input; inactive where no gradient is needed
  BackwardFn backward;
  bool released = false;  // saved tensors freed by a backward() without retain_graph
  ~Node();                // releases long chains iteratively, never recursively
};

// Grad mode is per thread, on by default.
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Attaches a Node to `output` when grad mode is on and any input requires grad; returns output.
// Ops call this once, after computing their forward result.
Tensor record(const char* name, Tensor output, const std::vector<Tensor>& inputs, BackwardFn fn);

// Reverse-mode pass: topological order without recursion, gradients summed where a tensor feeds
// several ops, leaf gradients accumulated (+=) into Tensor::grad().
void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph);

}  // namespace xg
