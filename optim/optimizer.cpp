#include "optim/optimizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "autograd/parallel.hpp"
#include "nn/safetensors.hpp"
#include "util/atomic_file.hpp"
#include "util/json_input.hpp"
#include "util/strings.hpp"

namespace xg::optim {

std::vector<ParamGroup> bert_param_groups(const nn::NamedTensors& params, float weight_decay) {
  ParamGroup decay{{}, weight_decay}, no_decay{{}, 0.f, 1.f, /*layer_adaptation=*/false};
  for (const auto& np : params) {
    // Vectors (norm scales and biases whatever their names, as in a model written against nn)
    // too: in BERT, RoBERTa and ALBERT those are exactly the biases and LayerNorm weights.
    const bool skip = ends_with(np.first, "bias") || np.first.find("LayerNorm") != std::string::npos ||
                      np.first.find("layer_norm") != std::string::npos || np.second.dim() < 2;
    (skip ? no_decay : decay).params.push_back(np);
  }
  return {decay, no_decay};
}

ParamGroups::ParamGroups(nn::NamedTensors params) : groups{ParamGroup{std::move(params)}} {}

ParamGroups::ParamGroups(const std::vector<Tensor>& params) {
  ParamGroup g;
  for (size_t i = 0; i < params.size(); ++i) g.params.emplace_back(std::to_string(i), params[i]);
  groups.push_back(std::move(g));
}

Optimizer::Optimizer(ParamGroups groups, float lr) : groups_(std::move(groups.groups)) {
  set_lr(lr);
  // A tensor is one parameter however many names reach it in a group (tied or shared weights): it
  // is stepped once, under its first name. The same name for two tensors, a tensor in two groups
  // (which weight decay and rate would it take?), an undefined tensor and one computed by an op
  // (it never gets a gradient of its own) are errors. Frozen parameters (requires_grad off) are
  // kept, as PyTorch keeps them: they have no gradient to step until they are unfrozen.
  std::set<std::string> names;
  std::map<const TensorImpl*, std::pair<size_t, std::string>> seen;  // group and first name of each tensor
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    ParamGroup& g = groups_[gi];
    if (!(g.weight_decay >= 0.f))
      throw std::invalid_argument(fmt::format("[optimizer] weight_decay {} must be >= 0", g.weight_decay));
    if (!(g.lr_scale >= 0.f) || !std::isfinite(g.lr_scale))
      throw std::invalid_argument(fmt::format("[optimizer] lr_scale {} must be finite and >= 0", g.lr_scale));
    nn::NamedTensors kept;
    for (const auto& [n, t] : g.params) {
      if (!names.insert(n).second)
        throw std::invalid_argument(fmt::format("[optimizer] parameter name '{}' appears twice", n));
      if (!t.defined()) throw std::invalid_argument(fmt::format("[optimizer] parameter '{}' is undefined", n));
      if (!t.is_leaf())
        throw std::invalid_argument(fmt::format("[optimizer] parameter '{}' was computed by '{}', not a leaf: it gets no "
                                                "gradient of its own; optimize the tensors it is computed from",
                                                n, t.grad_fn()->name));
      const auto [it, first] = seen.try_emplace(t.impl().get(), gi, n);
      if (!first && it->second.first != gi)
        throw std::invalid_argument(fmt::format("[optimizer] parameter '{}' is in group {} and, as '{}', in group {}: a "
                                                "tensor belongs to one group", it->second.second, it->second.first, n, gi));
      if (first) kept.emplace_back(n, t);
    }
    g.params = std::move(kept);
  }
}

void Optimizer::set_lr(float lr) {
  if (!(lr >= 0.f) || !std::isfinite(lr))
    throw std::invalid_argument(fmt::format("[optimizer] learning rate {} must be finite and >= 0", lr));
  lr_ = lr;
}

void Optimizer::bind(const nn::ParameterArena& arena) {
  if (step_ != 0 || !state_.empty())
    throw std::logic_error("[optimizer] bind() must come before the first step or load_state");
  std::unordered_map<const TensorImpl*, size_t> offsets;
  for (const auto& e : arena.entries()) offsets[e.param.impl().get()] = e.offset;
  for (const auto& g : groups_)
    for (const auto& [n, p] : g.params)
      if (!offsets.count(p.impl().get()))
        throw std::invalid_argument(fmt::format("[optimizer] bind: parameter '{}' is not in the arena", n));
  arena_offsets_ = std::move(offsets);
  arena_numel_ = arena.numel();
}

void Optimizer::step(double grad_scale) {
  if (!(grad_scale > 0.0 && grad_scale <= 1.0))
    throw std::invalid_argument(fmt::format("[optimizer] grad_scale {} is not in (0, 1]", grad_scale));
  grad_scale_ = grad_scale;
  ++step_;
  const std::vector<std::string> names = slot_names();
  std::vector<Span> spans;
  Tensor last_bumped;
  for (auto& g : groups_)
    for (auto& [name, p] : g.params) {
      Tensor grad = p.grad();  // scaled in place by a grad_scale
      if (!grad.defined()) continue;
      // A graph that saved p before this step can no longer be back-propagated. One bump per
      // storage: a flattened module's parameters share one, and come one after another.
      if (!p.same_storage(last_bumped)) p.bump_version(), last_bumped = p;
      Span s{p.data(), grad.data(), {}, p.numel(), g.weight_decay, g.lr_scale, g.layer_adaptation, false,
             ++parameter_steps_[name]};
      auto& slots = state_[name];
      for (size_t k = 0; k < names.size(); ++k) {
        s.fresh |= !slots.count(names[k]);
        s.slot[k] = slot(slots, names[k], p).data();
      }
      spans.push_back(s);
    }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.w < b.w; });
  apply(spans);
}

int64_t Optimizer::parameter_steps(const std::string& name) const {
  const auto it = parameter_steps_.find(name);
  return it == parameter_steps_.end() ? 0 : it->second;
}

void Optimizer::scale_grads(float* g, size_t n) const {
  if (grad_scale_ == 1.0) return;
  const double scale = grad_scale_;  // a local: the loop vectorises (float -> double -> float)
  for (size_t i = 0; i < n; ++i) g[i] = float(double(g[i]) * scale);
}

void ElementwiseOptimizer::apply(const std::vector<Span>& spans) {
  begin_pass();
  std::vector<size_t> starts(spans.size() + 1, 0);  // element index where each span begins
  for (size_t i = 0; i < spans.size(); ++i) starts[i + 1] = starts[i] + spans[i].n;
  // Memory-bound: even chunks of the concatenated spans.
  parallel_range(starts.back(), 1 << 15, [&](size_t begin, size_t end) {
    size_t i = size_t(std::upper_bound(starts.begin(), starts.end(), begin) - starts.begin()) - 1;
    for (; begin < end; ++i) {
      const size_t lo = begin - starts[i], hi = std::min(end, starts[i + 1]) - starts[i];
      Span part = spans[i];
      part.w += lo;
      part.g += lo;
      for (auto& p : part.slot)
        if (p) p += lo;
      part.n = hi - lo;
      // Pieces small enough that the scaled gradients are still in L1 when the update reads them.
      constexpr size_t kPiece = 2048;
      for (size_t at = 0; at < part.n; at += kPiece) {
        Span piece = part;
        piece.w += at;
        piece.g += at;
        for (auto& p : piece.slot)
          if (p) p += at;
        piece.n = std::min(kPiece, part.n - at);
        scale_grads(piece.g, piece.n);
        update_elements(piece);
      }
      begin = starts[i] + hi;
    }
  });
}

void Optimizer::zero_grad() {
  for (auto& g : groups_)
    for (auto& [_, p] : g.params) p.zero_grad();
}

Tensor& Optimizer::slot(std::map<std::string, Tensor>& slots, const std::string& name, const Tensor& p) {
  auto it = slots.find(name);
  if (it != slots.end()) return it->second;
  if (arena_offsets_.empty()) return slots.emplace(name, Tensor::zeros(p.shape())).first->second;
  auto& block = flat_slots_[name];
  if (!block) block = std::make_shared<Storage>(arena_numel_ * sizeof(float));
  Tensor view = Tensor::view_of(block, Dtype::Float32, p.shape(), contiguous_strides(p.shape()),
                                arena_offsets_.at(p.impl().get()));
  std::fill_n(view.data(), view.numel(), 0.f);  // the block may hold state dropped by load_state
  return slots.emplace(name, view).first->second;
}

nn::StateDict Optimizer::state_tensors() const {
  nn::StateDict out;
  for (const auto& [param, slots] : state_)
    for (const auto& [s, t] : slots) out[param + "." + s] = t;
  return out;
}

nlohmann::json Optimizer::state_json() const {
  nlohmann::json j = {{"optimizer", name()}, {"step", step_}, {"lr", lr_}, {"settings", settings()}};
  nlohmann::json differing = nlohmann::json::object();
  for (const auto& g : groups_)
    for (const auto& [n, _] : g.params)
      if (parameter_steps(n) != step_) differing[n] = parameter_steps(n);
  if (!differing.empty()) j["parameter_steps"] = differing;
  return j;
}

void Optimizer::save_state(const std::string& prefix) const {
  nn::safetensors::write(prefix + ".safetensors", state_tensors(), {{"optimizer", name()}});
  write_text_atomically(prefix + ".json", state_json().dump(2) + "\n");
}

void Optimizer::load_state(const std::string& prefix) {
  const std::string json_path = prefix + ".json";
  std::ifstream in(json_path);
  if (!in) throw std::runtime_error(fmt::format("[optimizer] {}: cannot open", json_path));
  std::map<std::string, Tensor> params;
  for (const auto& g : groups_)
    for (const auto& [n, t] : g.params) params[n] = t;
  // Nothing changes until the JSON and the tensors have both been checked.
  int64_t loaded_step = 0;
  float loaded_lr = 0.f;
  std::map<std::string, int64_t> loaded_counts;
  nlohmann::json j;
  try {
    j = parse_json_bounded(in);
    if (j.at("optimizer").get<std::string>() != name())
      throw std::runtime_error(fmt::format("[optimizer] {}: state is for '{}', this optimizer is '{}'",
                                           json_path, j.at("optimizer").get<std::string>(), name()));
    // A step must be a count and the rate a finite non-negative number: get<>() alone would truncate
    // 3.7 to 3 and take -5 or 1e39 (inf as a float), and the next update would use them.
    const nlohmann::json& step = j.at("step");
    if (!step.is_number_unsigned() || step.get<uint64_t>() > uint64_t(INT64_MAX))
      throw std::runtime_error(fmt::format("[optimizer] {}: step {} is not a step count", json_path, json_summary(step)));
    const nlohmann::json& lr = j.at("lr");
    if (!lr.is_number() || !std::isfinite(lr.get<float>()) || lr.get<float>() < 0.f)
      throw std::runtime_error(fmt::format("[optimizer] {}: lr {} is not a finite rate >= 0", json_path, json_summary(lr)));
    const nlohmann::json counts = j.value("parameter_steps", nlohmann::json::object());
    if (!counts.is_object())
      throw std::runtime_error(fmt::format("[optimizer] {}: parameter_steps {} is not an object", json_path, json_summary(counts)));
    for (const auto& [n, c] : counts.items()) {
      if (!params.count(n))
        throw std::runtime_error(fmt::format("[optimizer] {}: parameter_steps names '{}', no parameter of this optimizer",
                                             json_path, n));
      if (!c.is_number_unsigned() || c.get<uint64_t>() > step.get<uint64_t>())
        throw std::runtime_error(fmt::format("[optimizer] {}: parameter_steps['{}'] {} is not a count up to step {}",
                                             json_path, n, json_summary(c), step.get<uint64_t>()));
    }
    loaded_step = step.get<int64_t>();
    loaded_lr = lr.get<float>();
    for (const auto& [n, c] : counts.items()) loaded_counts[n] = c.get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("[optimizer] {}: bad state JSON ({})", json_path, e.what()));
  }
  const std::string tensors_path = prefix + ".safetensors";
  const nn::StateDict saved = nn::safetensors::read_float_tensors(tensors_path);
  std::set<std::string> with_state;  // parameters the file has state for
  for (const auto& [key, t] : saved) {  // check everything before changing anything
    const size_t dot = key.rfind('.');
    auto it = dot == std::string::npos ? params.end() : params.find(key.substr(0, dot));
    if (it != params.end()) with_state.insert(it->first);
    if (it == params.end())
      throw std::runtime_error(fmt::format("[optimizer] {}: state '{}' belongs to no parameter of this optimizer",
                                           tensors_path, key));
    if (it->second.shape() != t.shape())
      throw std::runtime_error(fmt::format("[optimizer] {}: state '{}' has shape {}, parameter has {}",
                                           tensors_path, key, shape_str(t.shape()), shape_str(it->second.shape())));
    // a NaN moment would make the first update NaN, which would then look like a too-high rate
    if (const auto i = nn::safetensors::first_nonfinite(t))
      throw std::runtime_error(fmt::format("[optimizer] {}: state '{}' holds {} at element {} of {}: the checkpoint's "
                                           "optimizer state is corrupt", tensors_path, key, t.contiguous().data()[*i], *i,
                                           t.numel()));
  }
  // A parameter the JSON does not list was updated at every step if it has state (as all were
  // counted before parameter_steps existed), never if it has none.
  for (const auto& [n, _] : params)
    if (!loaded_counts.count(n)) loaded_counts[n] = with_state.count(n) ? loaded_step : 0;
  step_ = loaded_step;
  set_lr(loaded_lr);
  parameter_steps_ = std::move(loaded_counts);
  state_.clear();
  for (const auto& [key, t] : saved) {
    const size_t dot = key.rfind('.');
    const std::string param = key.substr(0, dot);
    Tensor& dst = slot(state_[param], key.substr(dot + 1), params.at(param));
    std::copy_n(t.data(), t.numel(), dst.data());
  }
}

// ---- clipping and accumulation ----
namespace {
void check_max_norm(float max_norm) {
  if (!(max_norm > 0.f)) throw std::invalid_argument(fmt::format("[clip_grad_norm] max_norm {} must be > 0", max_norm));
}
}  // namespace

double clip_scale(double norm, float max_norm) {
  const double coef = double(max_norm) / (norm + 1e-6);  // PyTorch's clip_grad_norm_ coefficient
  return coef < 1.0 ? coef : 1.0;                         // only ever shrinks
}

float clip_grad_norm(const std::vector<Tensor>& params, float max_norm) {
  check_max_norm(max_norm);
  std::vector<Tensor> grads;  // each tensor once, even when tied under two names
  std::set<const TensorImpl*> seen;
  for (const auto& p : params)
    if (p.grad().defined() && seen.insert(p.impl().get()).second) grads.push_back(p.grad());
  double sq = 0;
  for (const auto& g : grads)
    for (size_t i = 0, n = g.numel(); i < n; ++i) sq += double(g.data()[i]) * g.data()[i];
  const double norm = std::sqrt(sq);
  const double coef = clip_scale(norm, max_norm);
  if (coef < 1.0)
    for (auto& g : grads)
      for (size_t i = 0, n = g.numel(); i < n; ++i) g.data()[i] = float(g.data()[i] * coef);
  return float(norm);
}

float clip_grad_norm(nn::ParameterArena& arena, float max_norm) {
  check_max_norm(max_norm);
  const double norm = arena.grad_norm();
  const double coef = clip_scale(norm, max_norm);
  if (coef < 1.0) arena.scale_grads(coef);
  return float(norm);
}

GradientAccumulator::GradientAccumulator(size_t n) : n_(n) {
  if (n == 0) throw std::invalid_argument("[GradientAccumulator] needs at least one micro-batch");
}

}  // namespace xg::optim
