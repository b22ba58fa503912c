#pragma once
// Where training metrics go: a list of sinks, each receiving named scalars at a step.
// metrics.jsonl is one sink; a TensorBoard sink plugs in the same way (make_sinks).
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "metrics/scalars.hpp"
#include "util/tensorboard.hpp"

namespace xg::training {

using metrics::Scalars;

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual void write(int64_t step, const Scalars& scalars) = 0;
};

// One JSON object per write, {"step": N, name: value, ...}, appended and flushed at once.
class JsonlSink : public MetricsSink {
 public:
  explicit JsonlSink(const std::string& path);
  void write(int64_t step, const Scalars& scalars) override;

 private:
  std::string path_;
  std::ofstream out_;
};

// TensorBoard event files in log_dir (util/tensorboard): each scalar under its own name as tag.
class TensorBoardSink : public MetricsSink {
 public:
  // `resumed_step` >= 0: the run goes on from that step, and TensorBoard is told to forget the
  // events logged after it.
  explicit TensorBoardSink(const std::string& log_dir, int64_t resumed_step = -1);
  void write(int64_t step, const Scalars& scalars) override;

 private:
  TensorBoardWriter writer_;
};

// The sinks a run asks for: `out_dir`/metrics.jsonl always; TensorBoard event files in
// `tensorboard_dir` when it is not empty. A run resumed at `resumed_step` (>= 0) first drops the
// metrics.jsonl rows of later steps (logged after that checkpoint by a run killed before its next
// one: they are logged again), and has TensorBoard forget the same (a session restart event).
std::vector<std::unique_ptr<MetricsSink>> make_sinks(const std::string& out_dir, const std::string& tensorboard_dir,
                                                     int64_t resumed_step = -1);

}  // namespace xg::training
