#pragma once
// Parameters as views of one flat block, gradients as views of a second one (llm.c's
// malloc_and_point_parameters). The gradients' global norm, clipping and an all-reduce become
// single passes over one buffer, zeroing needs no pass (the first gradient into a slot overwrites
// it), and gradient buckets are plain offset ranges. Parameters are deduplicated by identity: a tied or shared tensor is one entry that
// carries every name it is registered under.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.hpp"

namespace xg::nn {

class ParameterArena {
 public:
  struct Entry {
    std::vector<std::string> names;  // the first is the canonical one
    Tensor param;                    // a view of the parameter block
    size_t offset = 0, numel = 0;    // position in both blocks, in elements
  };

  // Moves `params` (float32) into one block, in order, each start aligned to 16 floats. Every
  // handle on a parameter sees the move (handles share the tensor). Frozen parameters
  // (requires_grad off) get a gradient slot too, so one unfrozen later is in the block's norm and
  // clipping (gradient buckets made while it was frozen do not wait for it).
  explicit ParameterArena(const NamedTensors& params);

  const std::vector<Entry>& entries() const { return entries_; }
  size_t numel() const { return numel_; }  // elements in each block, alignment padding included
  // 1-D views of the whole blocks.
  Tensor flat_params() const;
  Tensor flat_grads() const;
  // Marks every gradient undefined until the next backward writes it (so optimizers still skip
  // parameters that got none). The block is not written: a slot's first contribution overwrites
  // it (the engine's fresh slots), and zero_missing_grads() zeroes the slots none reached.
  void zero_grad();
  // Zeroes the gradient slot of every parameter in [offset, offset + numel) of the block that has
  // no gradient now (none came since its gradient was last dropped, by this zero_grad or any
  // other, or it is frozen) and whose slot may hold something else (TensorImpl::grad_slot_written:
  // set by the engine's writes and by any drop of the gradient, this zero_grad's included).
  // Afterwards the range holds every gradient, zeros where there is none: call it before reading
  // flat_grads() as a whole (grad_norm, scale_grads and the gradient buckets do). A parameter no
  // pass reaches (an unused pooler) is zeroed once per step: its size, not the block's.
  void zero_missing_grads(size_t offset = 0, size_t numel = SIZE_MAX);
  // L2 norm of all gradients, one pass over the block on every thread (partial sums over fixed
  // chunks, added in order: the same value for any thread count).
  double grad_norm();
  // Scales every gradient in one pass (in double, then rounded, as clip_grad_norm does).
  void scale_grads(double factor);

 private:
  std::vector<Entry> entries_;
  std::shared_ptr<Storage> params_, grads_;
  size_t numel_ = 0;
};

}  // namespace xg::nn
