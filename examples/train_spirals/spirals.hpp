#pragma once
// Two interleaved spirals (a classic non-linear task) and a small MLP written directly against
// the autograd API. Used by examples/train_spirals and by the learning test.
#include <cmath>
#include <vector>

#include "autograd/xgrad.hpp"

namespace spirals {

struct Dataset {
  xg::Tensor points;            // (2n, 2)
  std::vector<int64_t> labels;  // 0 or 1
};

// n points per class; radius grows with the angle, `turns` full turns, Gaussian noise.
inline Dataset make(size_t n, float noise, float turns, xg::Generator& gen) {
  Dataset d;
  d.points = xg::Tensor::empty({2 * n, 2});
  for (size_t c = 0; c < 2; ++c)
    for (size_t i = 0; i < n; ++i) {
      const float r = 0.1f + 0.9f * float(i) / float(n);
      const float t = turns * 6.2831853f * float(i) / float(n) + 3.1415927f * float(c);
      float* p = d.points.data() + 2 * (c * n + i);
      p[0] = r * std::sin(t) + noise * gen.normal();
      p[1] = r * std::cos(t) + noise * gen.normal();
      d.labels.push_back(int64_t(c));
    }
  return d;
}

struct Mlp {
  std::vector<xg::Tensor> weights, biases;

  // Layer sizes, e.g. {2, 64, 64, 2}; weights scaled by 1/sqrt(fan_in).
  Mlp(const std::vector<size_t>& sizes, xg::Generator& gen) {
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      weights.push_back(xg::Tensor::normal({sizes[i + 1], sizes[i]}, 0.f,
                                           1.f / std::sqrt(float(sizes[i])), gen, true));
      biases.push_back(xg::Tensor::zeros({sizes[i + 1]}, true));
    }
  }
  xg::Tensor forward(const xg::Tensor& x) const {
    xg::Tensor h = x;
    for (size_t i = 0; i < weights.size(); ++i) {
      h = xg::add(xg::matmul(h, weights[i], false, true), biases[i]);
      if (i + 1 < weights.size()) h = xg::tanh(h);
    }
    return h;
  }
  std::vector<xg::Tensor> parameters() const {
    std::vector<xg::Tensor> p = weights;
    p.insert(p.end(), biases.begin(), biases.end());
    return p;
  }
};

// Minimal Adam on raw buffers, enough for this example.
class Adam {
 public:
  Adam(std::vector<xg::Tensor> params, float lr) : params_(std::move(params)), lr_(lr) {
    for (const auto& p : params_) {
      m_.push_back(xg::Tensor::zeros(p.shape()));
      v_.push_back(xg::Tensor::zeros(p.shape()));
    }
  }
  void step() {
    ++t_;
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    const float c1 = 1.f - std::pow(b1, float(t_)), c2 = 1.f - std::pow(b2, float(t_));
    for (size_t i = 0; i < params_.size(); ++i) {
      xg::Tensor g = params_[i].grad();
      if (!g.defined()) continue;
      float *p = params_[i].data(), *m = m_[i].data(), *v = v_[i].data();
      for (size_t j = 0; j < g.numel(); ++j) {
        m[j] = b1 * m[j] + (1 - b1) * g.data()[j];
        v[j] = b2 * v[j] + (1 - b2) * g.data()[j] * g.data()[j];
        p[j] -= lr_ * (m[j] / c1) / (std::sqrt(v[j] / c2) + eps);
      }
      params_[i].zero_grad();
    }
  }

 private:
  std::vector<xg::Tensor> params_, m_, v_;
  float lr_;
  int t_ = 0;
};

inline double accuracy(const xg::Tensor& logits, const std::vector<int64_t>& labels) {
  size_t correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const float* row = logits.data() + 2 * i;
    correct += int64_t(row[1] > row[0]) == labels[i];
  }
  return double(correct) / double(labels.size());
}

}  // namespace spirals
