#include "training/builtin_callbacks.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "training/loss_window.hpp"
#include "training/rank_checks.hpp"

namespace xg::training {

namespace {
bool at(int64_t step, int64_t every, int64_t max_steps) { return every > 0 && (step % every == 0 || step == max_steps); }
}  // namespace

void StepCadence::on_step_end(const LoopState& state, LoopControl& control) {
  control.log = control.log || at(state.step, log_every_, state.max_steps) || state.step == state.max_steps;
  control.evaluate = control.evaluate || at(state.step, eval_every_, state.max_steps);
  control.save = control.save || at(state.step, save_every_, state.max_steps) || state.step == state.max_steps;
  control.stop = control.stop || (stop_at_ >= 0 && state.step >= stop_at_);
}

namespace {
std::atomic<int> g_signal{0};  // a stop signal received: save and stop
void on_stop_signal(int sig) { g_signal = sig; }
}  // namespace

StopOnSignals::StopOnSignals() {
  g_signal = 0;
  for (size_t i = 0; i < kSignals.size(); ++i) previous_[i] = std::signal(kSignals[i], on_stop_signal);
}

StopOnSignals::~StopOnSignals() {
  for (size_t i = 0; i < kSignals.size(); ++i) std::signal(kSignals[i], previous_[i]);
}

void StopOnSignals::on_step_end(const LoopState&, LoopControl& control) {
  if (const int sig = g_signal) control.signal = sig;
}

ConsoleProgress::ConsoleProgress(int64_t max_steps, bool quiet)
    : quiet_(quiet), tty_(::isatty(::fileno(stderr)) != 0 && !quiet), progress_("step", size_t(max_steps), "steps") {}

void ConsoleProgress::say(const std::string& text) {
  if (quiet_) return;
  if (tty_) fmt::print(stderr, "\r\033[K");  // over the progress bar
  fmt::print("{}\n", text);
  std::fflush(stdout);  // logs redirected to a file show progress as it happens
}

std::string ConsoleProgress::status(const LoopState& state) const {
  const LossWindow& w = *state.window;
  return w.steps ? fmt::format("{}  lr {:.2e}  {:.0f} tokens/s", w.loss_text(), state.lr, w.tokens_per_s()) : "";
}

void ConsoleProgress::on_step_end(const LoopState& state, LoopControl&) {
  if (tty_) progress_.update(size_t(state.step), status(state));
}

void ConsoleProgress::on_log(const LoopState& state, const Scalars&) {
  if (tty_ || quiet_) return;  // the bar shows it
  const double elapsed = progress_.elapsed_s();
  const double eta = elapsed / double(state.step - state.first_step) * double(state.max_steps - state.step);
  say(fmt::format("step {}/{}  {}  elapsed {}  ETA {}", state.step, state.max_steps, status(state),
                  Progress::format_duration(elapsed), Progress::format_duration(eta)));
}

void ConsoleProgress::on_evaluate(const LoopState& state, const Evaluation& e, LoopControl&) {
  if (!e.metrics.empty()) say(fmt::format("eval at step {}: {}", state.step, e.summary));
}

void ConsoleProgress::on_message(const LoopState&, const std::string& text) { say(text); }

void ConsoleProgress::on_train_end(const LoopState& state) {
  if (state.stopped) {
    if (tty_) fmt::print(stderr, "\n");
    const int s = state.signal;
    const std::string why = s == SIGINT    ? " (interrupted)"
                            : s == SIGTERM ? " (SIGTERM)"
                            : s == SIGUSR1 ? " (SIGUSR1)"
                            : s == SIGUSR2 ? " (SIGUSR2)"
                                           : "";  // --stop-at or a callback
    say(fmt::format("stopped at step {}{}; resume with --resume-from-checkpoint {}", state.step, why, state.last_checkpoint));
    return;
  }
  if (tty_) progress_.finish();
  if (state.converged)
    say(fmt::format("stopped early at step {} of {}: the task asked to stop; checkpoint {}", state.step, state.max_steps,
                    state.last_checkpoint));
  else
    say(fmt::format("done: step {}, checkpoint {}", state.step, state.last_checkpoint));
}

void MetricsLogging::on_log(const LoopState& state, const Scalars& row) {
  for (auto& sink : sinks_) sink->write(state.step, row);
}

void MetricsLogging::on_evaluate(const LoopState& state, const Evaluation& e, LoopControl&) {
  if (e.metrics.empty()) return;
  Scalars row;
  for (const auto& [name, v] : e.metrics) row.emplace_back("eval_" + name, v);
  for (auto& sink : sinks_) sink->write(state.step, row);
}

void RankWeightCheck::on_step_end(const LoopState& state, LoopControl&) {
  if (every_ > 0 && (state.step % every_ == 0 || state.step == state.max_steps)) check_same_parameters(comm_, arena_, state.step);
}

}  // namespace xg::training
