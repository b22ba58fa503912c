#include "training/loss_window.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace xg::training {

void LossWindow::add(const BatchLoss& b, size_t micro_batches) {
  loss += double(b.loss.item()) / double(micro_batches);
  add_parts(b.parts, 1.0 / double(micro_batches));
  for (const auto& [name, v] : b.counts) counts[name] += v;
  tokens += double(b.tokens);
}

void LossWindow::add_step(const LossWindow& step) {
  loss += step.loss;
  add_parts(step.parts, 1.0);
  for (const auto& [name, v] : step.counts) counts[name] += v;
  tokens += step.tokens;
  ++steps;
}

void LossWindow::add_parts(const Scalars& more, double weight) {
  for (const auto& [name, v] : more) {
    // (a lambda may not capture a structured binding before C++20: clang refuses it)
    auto it = std::find_if(parts.begin(), parts.end(), [&part = name](const auto& p) { return p.first == part; });
    if (it == parts.end()) parts.emplace_back(name, v * weight);
    else it->second += v * weight;
  }
}

double LossWindow::seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }

double LossWindow::tokens_per_s() const { return tokens / std::max(seconds(), 1e-9); }

std::string LossWindow::loss_text() const {
  std::string s = fmt::format("loss {:.4f}", loss / double(steps));
  for (size_t i = 0; i < parts.size(); ++i)
    s += fmt::format("{}{} {:.4f}", i == 0 ? " (" : ", ", parts[i].first, parts[i].second / double(steps));
  return parts.empty() ? s : s + ")";
}

Scalars LossWindow::scalars(const Task& task) const {
  Scalars s = {{"loss", loss / double(steps)}};
  for (const auto& [name, v] : parts) s.emplace_back(name + "_loss", v / double(steps));
  for (const auto& m : task.train_metrics(counts)) s.push_back(m);
  return s;
}

}  // namespace xg::training
