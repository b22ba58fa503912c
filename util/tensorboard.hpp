#pragma once
// TensorBoard event files: scalars (loss, learning rate, ...) that TensorBoard reads, written as
// events.out.tfevents.<unix seconds>.<hostname> in the log directory.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace xg {

// Writes one event file. Not thread-safe: call it from one thread.
class TensorBoardWriter {
 public:
  // Creates `log_dir` (and parents) and the event file; throws "[tensorboard] DIR: ..." when
  // either cannot be created.
  explicit TensorBoardWriter(const std::string& log_dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // Appends `value` under `tag` at `step`, stamped with the current wall time. An I/O error never
  // throws (training must go on): it is reported once on stderr and later scalars are dropped.
  void add_scalar(const std::string& tag, double value, int64_t step);
  // A restart at `step` (SessionLog START): TensorBoard drops the events of this directory's
  // earlier files from that step on, so a resumed run's replayed steps are not shown twice.
  void add_session_start(int64_t step);
  // Pushes buffered events to the file (also done every few seconds by add_scalar).
  void flush();

 private:
  void write_record(const std::string& event);
  void report_failure(const char* what);
  std::string path_;
  std::FILE* file_ = nullptr;
  bool failed_ = false;
  std::chrono::steady_clock::time_point last_flush_;
};

}  // namespace xg
