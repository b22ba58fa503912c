#pragma once
// What the server counts, exposed at GET /metrics in Prometheus' text format (version 0.0.4):
// requests by endpoint and status code, their latency, the queue's depth, batch sizes in
// sequences and tokens, tokens run and the recent tokens per second. Thread-safe.
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace xg::serve {

// A Prometheus histogram: counts per upper bound (cumulative when written), their sum and count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // The _bucket, _sum and _count lines of `name`, with `labels` ("endpoint=\"/embed\"") before le.
  std::string text(const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<unsigned long long> counts_;  // per bound, and one past the last (+Inf)
  double sum_ = 0;
  unsigned long long count_ = 0;
};

class Metrics {
 public:
  Metrics();
  // One answered request: its endpoint ("/embed"), status code and seconds from read to written.
  void request(const std::string& endpoint, int status, double seconds);
  // One batch the worker ran.
  void batch(size_t sequences, size_t tokens, double seconds);
  // Where the queue depth is read when the metrics are written.
  void set_queue_depth(std::function<size_t()> depth);
  // Everything, in Prometheus' text exposition format.
  std::string prometheus() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, unsigned long long> requests_;
  std::map<std::string, Histogram> latency_;
  Histogram batch_sequences_, batch_tokens_;
  unsigned long long batches_ = 0, tokens_ = 0;
  double inference_seconds_ = 0;
  std::deque<std::pair<std::chrono::steady_clock::time_point, size_t>> recent_;  // batches of the last window
  std::function<size_t()> queue_depth_;
};

}  // namespace xg::serve
