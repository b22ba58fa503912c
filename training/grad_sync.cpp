#include "training/grad_sync.hpp"

#include <chrono>

namespace xg::training {

GradientSync::GradientSync(Communicator& comm, nn::ParameterArena& arena, size_t bucket_bytes)
    : comm_(comm), reducing_(std::make_shared<bool>(false)) {
  buckets_ = std::make_unique<nn::GradientBuckets>(
      arena, bucket_bytes, [&comm, reducing = reducing_](const nn::GradientBuckets::Bucket&, const Tensor& grads) {
        if (!*reducing) return;
        // MPI moves a non-blocking collective on only inside MPI calls: testing the ones in flight
        // here lets each new bucket push the earlier ones forward while backward goes on.
        comm.progress();
        comm.start_allreduce(static_cast<float*>(grads.raw_data()), grads.numel());
      });
}

double GradientSync::wait() {
  const auto start = std::chrono::steady_clock::now();
  comm_.wait_all();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace xg::training
