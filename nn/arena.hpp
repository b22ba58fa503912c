#pragma once
// Parameters as views of one flat block, gradients as views of a second one (llm.c's
// malloc_and_point_parameters). Zeroing gradients, their global norm, a dtype cast and (later)
// an all-reduce become single passes over one buffer, and gradient buckets are plain offset
// ranges. Parameters are deduplicated by identity: a tied or shared tensor is one entry that
// carries every name it is registered under.
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
  // (requires_grad off) get no gradient slot.
  explicit ParameterArena(const NamedTensors& params);

  const std::vector<Entry>& entries() const { return entries_; }
  size_t numel() const { return numel_; }  // elements in each block, alignment padding included
  // 1-D views of the whole blocks.
  Tensor flat_params() const;
  Tensor flat_grads() const;
  // Zeroes the gradient block in one pass and marks every gradient undefined until the next
  // backward writes it (so optimizers still skip parameters that got none).
  void zero_grad();
  // L2 norm of all gradients, one pass over the block.
  double grad_norm() const;
  // Scales every gradient in one pass (in double, then rounded, as clip_grad_norm does).
  void scale_grads(double factor);

 private:
  std::vector<Entry> entries_;
  std::shared_ptr<Storage> params_, grads_;
  size_t numel_ = 0;
};

}  // namespace xg::nn
