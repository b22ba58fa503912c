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
// Where a backward may write an input's gradient in place: a leaf's gradient (float32,
// contiguous, the input's shape), or undefined. `fresh`: it holds no gradient yet (an arena slot
// with stale contents): overwrite it; otherwise add to it.
struct GradInto {
  Tensor dst;
  bool fresh = false;
};
// A backward that may write the gradient of an input with a defined into[i] there, returning an
// undefined tensor in its place; other gradients it returns as BackwardFn does (and the engine
// accumulates them as usual). An undefined return where into[i] is defined means "written": with
// `fresh` every element must then be overwritten, zeros included.
using BackwardIntoFn = std::function<std::vector<Tensor>(const Tensor& grad_output, const std::vector<GradInto>& into)>;

// Where an input's gradient goes: the node that produced it, or the leaf that accumulates it.
// Edges hold nodes, not tensors, so intermediate activations die with their last handle.
struct Edge {
  std::shared_ptr<Node> node;
  std::shared_ptr<TensorImpl> leaf;
  Shape shape;
  bool active() const { return node || leaf; }
};

// A tensor a backward closure reads, as it was when the op ran: its storage (not kept alive by
// this) and that storage's version then.
struct SavedVersion {
  std::weak_ptr<Storage> storage;
  uint64_t version = 0;
  Shape shape;  // for the error message
};

struct Node {
  std::string name;           // the op, for error messages
  std::vector<Edge> inputs;   // one per op input; inactive where no gradient is needed
  std::vector<SavedVersion> saved;  // checked before the backward runs
  BackwardFn backward;
  bool released = false;  // saved tensors freed by a backward() without retain_graph
  bool strided_grad_ok = false;  // backward reads its gradient through strides (views, matmul)
  bool reenters_backward = false;  // backward runs a nested backward (checkpoint)
  BackwardIntoFn backward_into;    // set by record_into() instead of backward
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

// Turns grad mode back on inside a NoGradGuard (e.g. to recompute a function in a backward).
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

// Anomaly detection (off by default; slow: a pass over every op's output and gradient): the first
// op whose forward output or backward gradient holds a NaN or an infinity throws, naming the op.
void set_detect_anomaly(bool on);
bool detect_anomaly();

// Attaches a Node to `output` when grad mode is on and any input requires grad; returns output.
// Ops call this once, after computing their forward result.
Tensor record(const char* name, Tensor output, const std::vector<Tensor>& inputs, BackwardFn fn);
// record() for an op whose backward reads `saved` (inputs, the output, copies of either; undefined
// entries are skipped): the backward throws, naming the op, if one was changed in place since.
Tensor record(const char* name, Tensor output, const std::vector<Tensor>& inputs, const std::vector<Tensor>& saved,
              BackwardFn fn);
// record() for an op whose backward can write a parameter's gradient in place: the engine hands it
// the gradient of each input that is a leaf with a float32 contiguous gradient or an arena slot
// (everywhere but under anomaly detection). A weight's GEMM then accumulates into its arena slot
// (beta 0 or 1) instead of allocating a gradient the engine copies or adds there, and an embedding
// adds only the rows it looked up instead of a dense zeroed (vocab, dim) tensor.
Tensor record_into(const char* name, Tensor output, const std::vector<Tensor>& inputs, const std::vector<Tensor>& saved,
                   BackwardIntoFn fn);

// Lets the node that produced `output` receive a strided (non-contiguous) gradient; by default
// the engine packs a gradient before handing it to a backward closure.
void accept_strided_grad(const Tensor& output);


// Reverse-mode pass: topological order without recursion, gradients summed where a tensor feeds
// several ops, leaf gradients accumulated (+=) into Tensor::grad() (in place when the leaf
// already has one, e.g. a view of a flat gradient arena). A leaf's grad hooks run as soon as its
// last contribution is added; when the graph holds a checkpoint (which re-enters backward),
// they all run at the end of the pass instead.
void run_backward(const Tensor& root, const Tensor& grad_output, bool retain_graph);

// Activation recomputation (gradient checkpointing): returns fn(inputs) computed without
// recording its graph; the backward re-runs fn with grad enabled (and the default generator's
// state as it was, so dropout masks repeat) and back-propagates through that. Trades one extra
// forward for not keeping fn's activations.
// `params` lists tensors fn reads besides its inputs (a layer's weights): the recomputation
// then runs even when no input requires grad, and their gradients accumulate as usual.
Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                  const std::vector<Tensor>& inputs, const std::vector<Tensor>& params = {});

}  // namespace xg
