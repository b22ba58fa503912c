#pragma once
// Data parallelism's gradient exchange, as PyTorch DDP's Reducer does it: the gradient block is
// cut into buckets (nn::GradientBuckets), and each bucket's all-reduce (a sum: the Trainer has
// already weighed each rank's loss by its share of the global batch) starts from the backward
// hooks as soon as the bucket is final, so it overlaps the rest of the backward pass, on a
// channel of its own (a rank that does not reach a parameter starts that bucket later). Only the
// last micro-batch of an accumulated step reduces; the earlier ones only accumulate.
#include <memory>

#include "nn/grad_buckets.hpp"
#include "training/distributed.hpp"

namespace xg::training {

class GradientSync {
 public:
  static constexpr size_t kDefaultBucketBytes = 25u << 20;  // DDP's default bucket_cap_mb
  // At most this many buckets (each reduces on a communicator of its own): a smaller
  // bucket_bytes is raised to the gradient block's size / kMaxBuckets.
  static constexpr size_t kMaxBuckets = 256;
  GradientSync(Communicator& comm, nn::ParameterArena& arena, size_t bucket_bytes = kDefaultBucketBytes);

  // Whether the next backward pass's buckets are all-reduced (true for the last micro-batch).
  void set_reducing(bool on) { *reducing_ = on; }
  // After each backward(): starts the buckets no hook started.
  void finish_backward() { buckets_->finish_backward(); }
  // Waits until every started all-reduce is done: the gradients are then the global ones. A
  // parameter some rank reached and this one did not gets the reduced sum as its gradient, so
  // every rank's optimizer steps the same parameters (PyTorch DDP's find_unused_parameters: a
  // one-float-per-parameter max-reduce of which ranks have a gradient); one no rank reached
  // stays without. Returns the seconds spent waiting (the part of the exchange the backward pass
  // did not hide).
  double wait();
  size_t bucket_count() const { return buckets_->buckets().size(); }

 private:
  Communicator& comm_;
  nn::ParameterArena& arena_;  // the model's; outlives this, as the buckets need it to
  std::shared_ptr<bool> reducing_;
  std::unique_ptr<nn::GradientBuckets> buckets_;
};

}  // namespace xg::training
