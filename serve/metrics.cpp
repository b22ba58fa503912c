#include "serve/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace xg::serve {

namespace {

// Tokens per second are averaged over the batches of this window.
constexpr std::chrono::seconds kThroughputWindow{10};

const std::vector<double> kLatencyBounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

std::vector<double> powers_of_two(double last) {
  std::vector<double> out;
  for (double b = 1; b <= last; b *= 2) out.push_back(b);
  return out;
}

std::string number(double v) { return fmt::format("{}", v); }

void header(std::string& out, const std::string& name, const std::string& type, const std::string& help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const size_t i = size_t(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  ++counts_[i];
  sum_ += value;
  ++count_;
}

std::string Histogram::text(const std::string& name, const std::string& labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  std::string out;
  unsigned long long cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, number(bounds_[i]), cumulative);
  }
  out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, count_);
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", name, braces, number(sum_), name, braces, count_);
  return out;
}

Metrics::Metrics() : batch_sequences_(powers_of_two(1024)), batch_tokens_(powers_of_two(65536)) {}

void Metrics::request(const std::string& endpoint, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
  latency_.try_emplace(endpoint, kLatencyBounds).first->second.observe(seconds);
}

void Metrics::batch(size_t sequences, size_t tokens, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  batch_sequences_.observe(double(sequences));
  batch_tokens_.observe(double(tokens));
  ++batches_;
  tokens_ += tokens;
  inference_seconds_ += seconds;
  const auto now = std::chrono::steady_clock::now();
  recent_.emplace_back(now, tokens);
  while (!recent_.empty() && now - recent_.front().first > kThroughputWindow) recent_.pop_front();
}

void Metrics::set_queue_depth(std::function<size_t()> depth) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_depth_ = std::move(depth);
}

std::string Metrics::prometheus() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  header(out, "xgrad_requests_total", "counter", "Requests answered, by endpoint and HTTP status code.");
  for (const auto& [key, n] : requests_)
    out += fmt::format("xgrad_requests_total{{endpoint=\"{}\",code=\"{}\"}} {}\n", key.first, key.second, n);
  header(out, "xgrad_request_errors_total", "counter", "Requests answered with a status of 400 or more, by endpoint.");
  std::map<std::string, unsigned long long> errors;
  for (const auto& [key, n] : requests_)
    if (key.second >= 400) errors[key.first] += n;
  for (const auto& [endpoint, n] : errors) out += fmt::format("xgrad_request_errors_total{{endpoint=\"{}\"}} {}\n", endpoint, n);
  header(out, "xgrad_request_duration_seconds", "histogram", "Seconds from a request read to its answer, by endpoint.");
  for (const auto& [endpoint, h] : latency_) out += h.text("xgrad_request_duration_seconds", fmt::format("endpoint=\"{}\"", endpoint));
  header(out, "xgrad_queue_depth", "gauge", "Requests queued for the model now.");
  out += fmt::format("xgrad_queue_depth {}\n", queue_depth_ ? queue_depth_() : 0);
  header(out, "xgrad_batch_size", "histogram", "Sequences per batch the model ran.");
  out += batch_sequences_.text("xgrad_batch_size", "");
  header(out, "xgrad_batch_tokens", "histogram", "Tokens per batch the model ran.");
  out += batch_tokens_.text("xgrad_batch_tokens", "");
  header(out, "xgrad_tokens_total", "counter", "Tokens the model ran.");
  out += fmt::format("xgrad_tokens_total {}\n", tokens_);
  header(out, "xgrad_inference_seconds_total", "counter", "Seconds the model spent running batches.");
  out += fmt::format("xgrad_inference_seconds_total {}\n", number(inference_seconds_));
  size_t recent_tokens = 0;  // batches are dropped from recent_ as later ones come: count only the window's
  const auto now = std::chrono::steady_clock::now();
  for (const auto& r : recent_)
    if (now - r.first <= kThroughputWindow) recent_tokens += r.second;
  header(out, "xgrad_tokens_per_second", "gauge", "Tokens per second over the last 10 seconds.");
  out += fmt::format("xgrad_tokens_per_second {}\n", number(double(recent_tokens) / double(kThroughputWindow.count())));
  return out;
}

}  // namespace xg::serve
