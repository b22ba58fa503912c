#include "training/grad_sync.hpp"

#include <chrono>
#include <vector>

namespace xg::training {

GradientSync::GradientSync(Communicator& comm, nn::ParameterArena& arena, size_t bucket_bytes)
    : comm_(comm), arena_(arena), reducing_(std::make_shared<bool>(false)) {
  buckets_ = std::make_unique<nn::GradientBuckets>(
      arena, bucket_bytes, [&comm, reducing = reducing_](const nn::GradientBuckets::Bucket& bucket, const Tensor& grads) {
        if (!*reducing) return;
        // MPI moves a non-blocking collective on only inside MPI calls: testing the ones in flight
        // here lets each new bucket push the earlier ones forward while backward goes on.
        comm.progress();
        // A channel per bucket: ranks that reach different parameters start them in different orders.
        comm.start_allreduce(static_cast<float*>(grads.raw_data()), grads.numel(), bucket.index);
      });
  comm.reserve_channels(buckets_->buckets().size());
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
