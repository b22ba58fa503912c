#include "nn/arena.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "autograd/parallel.hpp"

namespace xg::nn {

namespace {
constexpr size_t kAlign = 16;  // floats: each parameter starts on a 64-byte line
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
}  // namespace

ParameterArena::ParameterArena(const NamedTensors& params) {
  std::unordered_map<TensorImpl*, size_t> seen;
  for (const auto& [name, t] : params) {
    if (t.dtype() != Dtype::Float32)
      throw std::invalid_argument(fmt::format("[ParameterArena] parameter '{}' is {}, not float32", name,
                                              dtype_name(t.dtype())));
    auto [it, fresh] = seen.try_emplace(t.impl().get(), entries_.size());
    if (!fresh) {
      entries_[it->second].names.push_back(name);
      continue;
    }
    Entry e;
    e.names = {name};
    e.param = t;
    e.offset = numel_;
    e.numel = t.numel();
    numel_ += round_up(e.numel);
    entries_.push_back(std::move(e));
  }
  params_ = std::make_shared<Storage>(numel_ * sizeof(float));
  grads_ = std::make_shared<Storage>(numel_ * sizeof(float));
  std::memset(params_->data(), 0, params_->nbytes());
  std::memset(grads_->data(), 0, grads_->nbytes());
  for (auto& e : entries_) {
    const Tensor old = e.param.detach();
    Tensor view = Tensor::view_of(params_, Dtype::Float32, old.shape(), contiguous_strides(old.shape()), e.offset);
    std::memcpy(view.data(), old.contiguous().data(), e.numel * sizeof(float));
    // Re-point the shared TensorImpl, so every module and tied reference follows.
    TensorImpl& impl = *e.param.impl();
    impl.storage = params_;
    impl.strides = view.strides();
    impl.offset = e.offset;
    impl.grad.reset();
    impl.grad_slot.reset();
    impl.grad_slot_written = false;  // the new block is zeros
    // frozen ones too: unfrozen later, their gradients land in the block (its norm, its clipping)
    impl.grad_slot = Tensor::view_of(grads_, Dtype::Float32, old.shape(), view.strides(), e.offset).impl();
  }
}

Tensor ParameterArena::flat_params() const {
  return Tensor::view_of(params_, Dtype::Float32, {numel_}, {1}, 0);
}
Tensor ParameterArena::flat_grads() const {
  return Tensor::view_of(grads_, Dtype::Float32, {numel_}, {1}, 0);
}

void ParameterArena::zero_grad() {
  for (auto& e : entries_) {
    TensorImpl& impl = *e.param.impl();
    // flat_grads() is writable by anyone (a hand-made all-reduce): after this zero_grad every
    // slot is zeroed once if no gradient comes, whatever wrote it. A frozen parameter's slot
    // only when it held a gradient: a frozen encoder's slots are not rewritten with zeros each step.
    if (impl.grad_slot && (impl.requires_grad || impl.grad)) impl.grad_slot_written = true;
    impl.grad.reset();
  }
}

void ParameterArena::zero_missing_grads(size_t offset, size_t numel) {
  const size_t end = numel > numel_ - std::min(offset, numel_) ? numel_ : offset + numel;
  float* g = static_cast<float*>(grads_->data());
  for (const Entry& e : entries_) {
    if (e.offset >= end || e.offset + e.numel <= offset) continue;
    TensorImpl& impl = *e.param.impl();
    if (impl.grad || !impl.grad_slot_written) continue;
    fill_in_parallel(g + e.offset, e.numel, 0.f);
    impl.grad_slot_written = false;
  }
}

namespace {
constexpr size_t kNormChunk = 1 << 16;  // floats per partial sum: fixed, so no thread count shows

// Sum of g[i]^2 in double over one chunk: eight accumulators in a fixed order (the compiler keeps
// them in two AVX registers), not one dependent add per element.
double sum_squares(const float* g, size_t n) {
  double acc[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < 8; ++j) acc[j] += double(g[i + j]) * double(g[i + j]);
  for (; i < n; ++i) acc[i % 8] += double(g[i]) * double(g[i]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
}  // namespace

double ParameterArena::grad_norm() {
  zero_missing_grads();
  // Partial sums over fixed chunks, on every thread, added in chunk order: the same value for any
  // thread count. (One serial sum took 11 ms of a mini step in the trainer and 105 ms of base's.)
  const float* g = static_cast<const float*>(grads_->data());
  std::vector<double> partial((numel_ + kNormChunk - 1) / kNormChunk);
  parallel_for(partial.size(), [&](size_t c) {
    partial[c] = sum_squares(g + c * kNormChunk, std::min(kNormChunk, numel_ - c * kNormChunk));
  });
  double total = 0;
  for (double p : partial) total += p;
  return std::sqrt(total);
}

void ParameterArena::scale_grads(double factor) {
  zero_missing_grads();
  float* g = static_cast<float*>(grads_->data());
  parallel_range(numel_, 1 << 16, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) g[i] = float(g[i] * factor);
  });
}

}  // namespace xg::nn
