#include "training/training_loop.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "training/data_parallel.hpp"
#include "training/grad_sync.hpp"
#include "training/loss_window.hpp"
#include "training/trainer.hpp"

namespace xg::training {

namespace {

// --detect-anomaly for this run only.
struct AnomalyMode {
  explicit AnomalyMode(bool on) : previous(detect_anomaly()) { set_detect_anomaly(on); }
  ~AnomalyMode() { set_detect_anomaly(previous); }
  bool previous;
};

}  // namespace

LoopState TrainingLoop::run(int64_t step, const std::string& checkpoint) {
  nn::Module& model = task.model();
  const bool writer = comm.rank() == 0;
  AnomalyMode anomaly_mode(opt.detect_anomaly);
  LossWindow window;
  LoopState state;
  state.step = state.first_step = step;
  state.max_steps = opt.steps;
  state.rank = comm.rank();
  state.window = &window;
  state.task = &task;
  state.last_checkpoint = checkpoint;
  const auto each = [&](const auto& call) {
    for (TrainerCallback* c : callbacks) call(*c);
  };
  each([&](TrainerCallback& c) { c.on_train_begin(state); });
  const auto start = std::chrono::steady_clock::now();
  double allreduce_wait = 0;  // seconds waited for gradients after backward, in the log window
  bool started = false;
  while (state.step < opt.steps) {
    // ---- one optimizer step ----
    if (sync) manual_seed(rank_step_seed(opt.seed, comm.rank(), state.step));  // each rank its own dropout
    model.zero_grad();
    LossWindow this_step;  // joins the log window only when its update is made
    for (size_t micro = 0; micro < opt.grad_accum; ++micro) {
      BatchLoss b = task.next_batch_loss(opt.batch);
      if (sync) {
        b = share_of_global_batch(comm, std::move(b), opt.batch);
        sync->set_reducing(micro + 1 == opt.grad_accum);  // the earlier micro-batches only accumulate
      }
      mul(b.loss, Tensor::scalar(1.f / float(opt.grad_accum))).backward();
      if (sync) sync->finish_backward();
      this_step.add(b, opt.grad_accum);
    }
    if (sync) {
      allreduce_wait += sync->wait();
      sum_over_ranks(comm, this_step.loss, this_step.parts, this_step.counts, this_step.tokens);
    }
    const double loss = this_step.loss;
    // The norm before clipping (also the non-finite guard's); the clipping itself happens inside
    // the optimizer's pass (step's grad_scale), not in a pass of its own over the gradients.
    const double norm = model.arena()->grad_norm();
    state.lr = schedule.at(state.step);
    ++state.step;
    state.updated = std::isfinite(loss) && std::isfinite(float(norm));  // a norm past float's range too
    if (!state.updated) {
      const std::string what = std::isfinite(loss) ? fmt::format("the gradient norm is {}", norm) : fmt::format("the loss is {}", loss);
      if (opt.on_nonfinite == "stop")  // the loss and norm are the ranks' sums: every rank stops here, together
        throw CollectiveError(fmt::format(
            "[trainer] step {}: {}; stopped before updating the weights (last checkpoint: {}). A lower --learning-rate or "
            "--clip may help; --on-nonfinite skip skips such updates",
            state.step, what, state.last_checkpoint.empty() ? std::string("none") : state.last_checkpoint));
      each([&](TrainerCallback& c) { c.on_message(state, fmt::format("step {}: {}; update skipped", state.step, what)); });
    } else {
      optimizer.set_lr(state.lr);
      optimizer.step(opt.clip > 0 ? optim::clip_scale(norm, opt.clip) : 1.0);
      window.add_step(this_step);
    }

    // ---- what the callbacks ask for ----
    LoopControl control;
    each([&](TrainerCallback& c) { c.on_step_end(state, control); });
    if (writer && control.log && window.steps > 0) {
      Scalars row = window.scalars(task);
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      row.insert(row.end(), {{"lr", state.lr}, {"tokens_per_s", window.tokens_per_s()}, {"elapsed_s", elapsed}});
      if (sync) row.emplace_back("allreduce_wait_s", allreduce_wait / double(window.steps));
      each([&](TrainerCallback& c) { c.on_log(state, row); });
    }
    if (control.log && window.steps > 0) {  // a new window
      window = LossWindow();
      allreduce_wait = 0;
    }
    bool converged = false;  // the task asked to stop (early stopping; rank 0 evaluates)
    if (writer && control.evaluate) {
      Evaluation e;
      {
        NoGradGuard no_grad;
        model.eval();
        e = task.evaluate(opt.batch);
        model.train();
      }
      each([&](TrainerCallback& c) { c.on_evaluate(state, e, control); });
      converged = e.stop;
    }
    if (!started) first_step_made();
    started = true;
    // mpirun passes a signal on to every rank, not at the same instant, and only rank 0 evaluates:
    // agree on stopping
    double seen[3] = {double(control.signal), converged ? 1.0 : 0.0, control.stop ? 1.0 : 0.0};
    comm.allreduce(seen, 3, ReduceOp::Max);
    state.signal = int(seen[0]);
    state.converged = seen[1] != 0;
    state.stopped = state.signal != 0 || seen[2] != 0;
    if (control.save || state.stopped || state.converged) {
      state.last_checkpoint = save(state.step, state.converged);
      if (writer) each([&](TrainerCallback& c) { c.on_save(state, state.last_checkpoint); });
    }
    if (state.stopped || state.converged) break;
  }
  each([&](TrainerCallback& c) { c.on_train_end(state); });
  return state;
}

}  // namespace xg::training
