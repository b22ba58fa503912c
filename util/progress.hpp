#pragma once
// Progress for long jobs: on a terminal one line redrawn in place, otherwise (logs, pipes) a plain
// line every `log_every_s` seconds. Shows done/total, rate, elapsed and ETA, plus a caller's text.
#include <chrono>
#include <cstdio>
#include <string>

namespace xg {

class Progress {
 public:
  Progress(std::string label, size_t total, std::string unit = "", double log_every_s = 10.0,
           std::FILE* out = stderr);
  // Reports that `done` of total are finished; redraws at most ~10 times a second.
  void update(size_t done, const std::string& extra = "");
  // Final line (always printed).
  void finish(const std::string& extra = "");
  double elapsed_s() const;
  static std::string format_duration(double seconds);

 private:
  void draw(size_t done, const std::string& extra, bool final);
  std::string label_, unit_;
  size_t total_;
  double log_every_s_;
  std::FILE* out_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  size_t done_ = 0;
};

}  // namespace xg
