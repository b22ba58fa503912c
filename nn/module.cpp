#include "nn/module.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>
#include <unordered_set>

#include "nn/arena.hpp"

namespace xg::nn {

std::string LoadReport::str() const {
  std::string s;
  auto list = [&](const char* what, const std::vector<std::string>& names) {
    if (names.empty()) return;
    s += fmt::format("{}{} ({}):", s.empty() ? "" : "; ", what, names.size());
    const size_t shown = std::min<size_t>(names.size(), 20);
    for (size_t i = 0; i < shown; ++i) s += " " + names[i] + (i + 1 < shown ? "," : "");
    if (names.size() > shown) s += fmt::format(" ... and {} more", names.size() - shown);
  };
  list("missing", missing);
  list("unexpected", unexpected);
  list("shape mismatch", mismatched);
  return s.empty() ? "ok" : s;
}

void Module::check_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw std::invalid_argument(fmt::format("[Module] invalid name '{}': non-empty, without '.'", name));
  auto taken = [&](const auto& v) {
    for (const auto& [n, _] : v)
      if (n == name) return true;
    return false;
  };
  if (taken(params_) || taken(buffers_) || taken(children_))
    throw std::invalid_argument(fmt::format("[Module] name '{}' is already registered", name));
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  check_name(name);
  if (!t.defined()) throw std::invalid_argument(fmt::format("[Module] parameter '{}' is undefined", name));
  t.requires_grad_(true);
  params_.emplace_back(name, t);
  return t;
}

void Module::replace_module(const std::string& name, std::shared_ptr<Module> m) {
  if (!m) throw std::invalid_argument(fmt::format("[Module] replacing sub-module '{}' with null", name));
  for (auto& [n, child] : children_)
    if (n == name) {
      child = std::move(m);
      return;
    }
  throw std::invalid_argument(fmt::format("[Module] no sub-module '{}' to replace", name));
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  check_name(name);
  if (!t.defined()) throw std::invalid_argument(fmt::format("[Module] buffer '{}' is undefined", name));
  buffers_.emplace_back(name, t);
  return t;
}

void Module::collect(const std::string& prefix, NamedTensors& out, bool buffers) const {
  for (const auto& [n, t] : buffers ? buffers_ : params_) out.emplace_back(prefix + n, t);
  for (const auto& [n, m] : children_) m->collect(prefix + n + ".", out, buffers);
}

NamedTensors Module::named_parameters(bool all_names) const {
  NamedTensors out;
  collect("", out, false);
  if (all_names) return out;
  NamedTensors unique;
  std::unordered_set<const TensorImpl*> seen;
  for (auto& nt : out)
    if (seen.insert(nt.second.impl().get()).second) unique.push_back(std::move(nt));
  return unique;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_parameters()) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", out, true);
  return out;
}

size_t Module::num_parameters() const {
  size_t n = 0;
  for (const auto& [_, t] : named_parameters()) n += t.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, m] : children_) m->train(on);
}

void Module::set_execution(const ExecutionOptions& options) {
  execution_ = options;
  for (auto& [_, m] : children_) m->set_execution(options);
}

void Module::apply(const std::function<void(Module&)>& fn) {
  fn(*this);
  for (auto& [_, m] : children_) m->apply(fn);
}

void Module::zero_grad() {
  if (arena_) return arena_->zero_grad();
  for (auto& [_, t] : named_parameters()) t.zero_grad();
}

void Module::requires_grad_(bool on) {
  for (auto& [_, t] : named_parameters()) {
    t.requires_grad_(on);
    if (!on) t.zero_grad();
  }
}

ParameterArena& Module::flatten_parameters() {
  if (arena_) throw std::logic_error("[Module] flatten_parameters() was already called");
  arena_ = std::make_shared<ParameterArena>(named_parameters(/*all_names=*/true));
  return *arena_;
}

StateDict Module::state_dict() const {
  StateDict sd;
  for (auto& [n, t] : named_parameters(/*all_names=*/true)) sd[n] = t;
  for (auto& [n, t] : named_buffers()) sd[n] = t;
  return sd;
}

LoadReport Module::load_state_dict(const StateDict& state, bool strict) {
  LoadReport report;
  StateDict own = state_dict();
  std::vector<std::pair<Tensor, Tensor>> copies;  // (destination, source)
  for (auto& [name, dst] : own) {
    auto it = state.find(name);
    if (it == state.end()) {
      report.missing.push_back(name);
    } else if (it->second.shape() != dst.shape()) {
      report.mismatched.push_back(fmt::format("{}: checkpoint {} vs module {}", name,
                                              shape_str(it->second.shape()), shape_str(dst.shape())));
    } else {
      copies.emplace_back(dst, it->second);
    }
  }
  for (auto& [name, _] : state)
    if (!own.count(name)) report.unexpected.push_back(name);
  if (strict && !report.ok())
    throw std::invalid_argument("[load_state_dict] " + report.str());
  for (auto& [dst, src] : copies)
    if (dst.impl() != src.impl()) dst.copy_(src);
  return report;
}

}  // namespace xg::nn
