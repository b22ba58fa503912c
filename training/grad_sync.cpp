#include "training/grad_sync.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace xg::training {

GradientSync::GradientSync(Communicator& comm, nn::ParameterArena& arena, size_t bucket_bytes)
    : comm_(comm), arena_(arena), reducing_(std::make_shared<bool>(false)) {
  // Each bucket holds a communicator, and MPI libraries run out at a few thousand (MPICH: ~2,000):
  // small buckets of a large model are made larger instead.
  bucket_bytes = std::max(bucket_bytes, (arena.numel() * sizeof(float) + kMaxBuckets - 1) / kMaxBuckets);
  buckets_ = std::make_unique<nn::GradientBuckets>(
      arena, bucket_bytes, [&comm, reducing = reducing_](const nn::GradientBuckets::Bucket& bucket, const Tensor& grads) {
        if (!*reducing) return;
        // MPI moves a non-blocking collective on only inside MPI calls: testing the ones in flight
        // here lets each new bucket push the earlier ones forward while backward goes on.
        comm.progress();
        // A channel per bucket (channel 0, the world, is left to the blocking collectives): ranks
        // that reach different parameters start their buckets in different orders.
        comm.start_allreduce(static_cast<float*>(grads.raw_data()), grads.numel(), bucket.index + 1);
      });
  comm.reserve_channels(buckets_->buckets().size() + 1);
}

double GradientSync::wait() {
  const auto start = std::chrono::steady_clock::now();
  comm_.wait_all();
  if (comm_.distributed() && *reducing_) {
    // Each bucket zeroed this rank's missing gradients before its reduce, so such a slot now
    // holds the other ranks' sum: adopt it where any rank had a gradient.
    const auto& entries = arena_.entries();
    std::vector<float> reached(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) reached[i] = entries[i].param.impl()->grad ? 1.f : 0.f;
    comm_.allreduce(reached.data(), reached.size(), ReduceOp::Max);
    for (size_t i = 0; i < entries.size(); ++i) {
      TensorImpl& impl = *entries[i].param.impl();
      if (reached[i] > 0.f && !impl.grad && impl.grad_slot) impl.grad = impl.grad_slot;
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace xg::training
