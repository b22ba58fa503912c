#include "util/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

namespace xg {

Progress::Progress(std::string label, size_t total, std::string unit, double log_every_s, std::FILE* out)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), log_every_s_(log_every_s), out_(out),
      tty_(::isatty(::fileno(out)) != 0), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::format_duration(double s) {
  if (!(s >= 0) || s > 1e7) return "--:--";
  const long t = long(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02d}:{:02d}", t / 3600, (t / 60) % 60, t % 60)
                   : fmt::format("{:02d}:{:02d}", t / 60, t % 60);
}

void Progress::update(size_t done, const std::string& extra) {
  done_ = done;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_draw_).count();
  if (since < (tty_ ? 0.1 : log_every_s_)) return;
  last_draw_ = now;
  draw(done, extra, false);
}

void Progress::finish(const std::string& extra) { draw(done_ = total_ ? total_ : done_, extra, true); }

void Progress::draw(size_t done, const std::string& extra, bool final) {
  const double el = elapsed_s();
  const double rate = el > 0 ? double(done) / el : 0;
  const double eta = rate > 0 && total_ >= done ? double(total_ - done) / rate : -1;
  std::string line = total_ ? fmt::format("{} {}/{} ({:.1f}%)", label_, done, total_, 100.0 * double(done) / double(total_))
                            : fmt::format("{} {}", label_, done);
  line += fmt::format("  {:.1f} {}/s  elapsed {}", rate, unit_.empty() ? "it" : unit_, format_duration(el));
  if (!final && total_) line += "  ETA " + format_duration(eta);
  if (!extra.empty()) line += "  " + extra;
  if (tty_) fmt::print(out_, "\r\033[K{}{}", line, final ? "\n" : "");
  else fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

}  // namespace xg
