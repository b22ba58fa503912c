#pragma once
// Gradient buckets over a flat parameter arena, as PyTorch DDP's Reducer forms them: trainable
// parameters taken in reverse registration order (roughly the order backward finishes them),
// grouped into buckets of about `bucket_bytes`, each one contiguous range of the gradient block.
// A callback runs as soon as every parameter of a bucket has its final gradient for the current
// backward pass, so communication (an all-reduce of that range) overlaps the rest of the pass.
#include <functional>
#include <memory>
#include <vector>

#include "nn/arena.hpp"

namespace xg::nn {

class GradientBuckets {
 public:
  struct Bucket {
    size_t index = 0;
    size_t offset = 0, numel = 0;  // its range of the gradient block (padding and frozen entries inside it included)
    std::vector<size_t> entries;   // the trainable arena entries it waits for
  };
  // `grads` is a 1-D view of the bucket's range of the gradient block.
  using ReadyFn = std::function<void(const Bucket& bucket, const Tensor& grads)>;

  // `arena` must outlive this object: a bucket zeroes its unreached slots through it when it fires.
  GradientBuckets(ParameterArena& arena, size_t bucket_bytes, ReadyFn on_ready);

  const std::vector<Bucket>& buckets() const;
  // Call after each backward(): fires the buckets still waiting (some parameter got no gradient
  // in this pass; its slot is zeroed first), then re-arms all for the next pass.
  void finish_backward();

 private:
  struct State;
  // Shared with the hooks, which outlive this object on the parameters and then do nothing.
  std::shared_ptr<State> state_;
};

}  // namespace xg::nn
