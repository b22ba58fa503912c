#include "nn/grad_buckets.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace xg::nn {

struct GradientBuckets::State {
  std::vector<Bucket> buckets;
  std::vector<size_t> pending;  // per bucket: parameters whose gradient is not final yet
  std::vector<bool> fired;
  ParameterArena* arena = nullptr;
  Tensor flat_grads;
  ReadyFn on_ready;

  void fire(size_t b) {
    fired[b] = true;
    const Bucket& bucket = buckets[b];
    arena->zero_missing_grads(bucket.offset, bucket.numel);  // frozen ones, or none came
    on_ready(bucket, slice(flat_grads, 0, long(bucket.offset), long(bucket.offset + bucket.numel)));
  }
  void arm() {
    for (size_t b = 0; b < buckets.size(); ++b) {
      pending[b] = buckets[b].entries.size();
      fired[b] = false;
    }
  }
};

GradientBuckets::GradientBuckets(ParameterArena& arena, size_t bucket_bytes, ReadyFn on_ready)
    : state_(std::make_shared<State>()) {
  if (bucket_bytes == 0) throw std::invalid_argument("[GradientBuckets] bucket_bytes must be > 0");
  if (!on_ready) throw std::invalid_argument("[GradientBuckets] needs a callback");
  State& s = *state_;
  s.arena = &arena;
  s.flat_grads = arena.flat_grads();
  s.on_ready = std::move(on_ready);
  const auto& entries = arena.entries();
  std::vector<size_t> bucket_of(entries.size(), SIZE_MAX);
  for (size_t i = entries.size(); i-- > 0;) {
    if (!entries[i].param.requires_grad()) continue;  // frozen: never waited for
    if (s.buckets.empty() || s.buckets.back().numel * sizeof(float) >= bucket_bytes) {
      s.buckets.emplace_back();
      s.buckets.back().index = s.buckets.size() - 1;
      s.buckets.back().offset = entries[i].offset + entries[i].numel;  // grows downwards below
    }
    Bucket& b = s.buckets.back();
    const size_t end = b.offset + b.numel;
    b.offset = entries[i].offset;
    b.numel = end - b.offset;
    b.entries.push_back(i);
    bucket_of[i] = b.index;
  }
  s.pending.resize(s.buckets.size());
  s.fired.resize(s.buckets.size());
  s.arm();
  const std::weak_ptr<State> weak = state_;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (bucket_of[i] == SIZE_MAX) continue;
    Tensor param = entries[i].param;
    param.register_grad_hook([weak, b = bucket_of[i]](const Tensor&) {
      const auto state = weak.lock();
      if (!state || state->fired[b]) return;
      if (--state->pending[b] == 0) state->fire(b);
    });
  }
}

const std::vector<GradientBuckets::Bucket>& GradientBuckets::buckets() const { return state_->buckets; }

void GradientBuckets::finish_backward() {
  State& s = *state_;
  for (size_t b = 0; b < s.buckets.size(); ++b)
    if (!s.fired[b]) s.fire(b);
  s.arm();
}

}  // namespace xg::nn
