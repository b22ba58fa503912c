// Helper of tests/data_parallel/data_parallel.sh (not a user program):
//   dp_check compare A.safetensors B.safetensors TOL
//       every tensor of A within TOL of B's (same names and shapes); prints the largest difference
//   dp_check pretrain --fault perturb|kill|stop|nan|setup|unsplittable|model --fault-rank R --fault-at K
//                     [--fault-model CONFIG] [bert_pretrain's options]
//       pre-trains as bert_pretrain does, and at rank R's K-th micro-batch either nudges one of
//       its weights (the divergence check must stop the run) or kills the process with SIGKILL
//       (the other ranks must not hang); `setup`: rank R fails to build its task (while the
//       others go on building theirs, a vocabulary too with --train-vocab); `unsplittable`: rank R
//       fails once its task is built, and the others' task cannot split its batches (an error
//       every rank but R meets);
//       `model`: rank R builds its task from CONFIG instead of --model, as a node whose copy of
//       the config differs would.
//   dp_check allreduce FLOATS REPEATS
//       times a blocking all-reduce of FLOATS floats (the measurements in docs/distributed.md, "Performance")
//   dp_check unused
//       a parameter only rank 0 reaches: every rank must step it with the reduced gradient (the
//       replicas stay equal), and one no rank reaches must not move
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <vector>

#include "nn/nn.hpp"
#include "nn/safetensors.hpp"
#include "optim/optimizer.hpp"
#include "training/distributed.hpp"
#include "training/grad_sync.hpp"
#include "training/rank_checks.hpp"
#include "training/tasks/pretraining.hpp"

using namespace xg;
using namespace xg::training;

namespace {

int compare(const std::string& a_path, const std::string& b_path, double tol) {
  const nn::StateDict a = nn::safetensors::read_float_tensors(a_path), b = nn::safetensors::read_float_tensors(b_path);
  if (a.size() != b.size()) return fmt::print("{} has {} tensors, {} has {}\n", a_path, a.size(), b_path, b.size()), 1;
  double worst = 0;
  std::string where;
  for (const auto& [name, t] : a) {
    const auto it = b.find(name);
    if (it == b.end() || it->second.shape() != t.shape()) return fmt::print("{}: missing or reshaped in {}\n", name, b_path), 1;
    const auto x = t.to_vector(), y = it->second.to_vector();
    for (size_t i = 0; i < x.size(); ++i)
      if (!(std::fabs(double(x[i]) - y[i]) <= worst)) worst = std::fabs(double(x[i]) - y[i]), where = name;
  }
  fmt::print("largest difference {:.3g} (in {}) over {} tensors, tolerance {:.3g}\n", worst, where, a.size(), tol);
  return worst <= tol ? 0 : 1;
}

// Forwards everything to the pre-training task, and injects the fault at its K-th batch (a
// perturbation at K = 0: in the weights the task built, before the first step).
class FaultyTask : public Task {
 public:
  FaultyTask(std::unique_ptr<Task> inner, std::string fault, int rank, int at)
      : inner_(std::move(inner)), fault_(std::move(fault)), rank_(rank), at_(at) {
    if (at_ == 0 && fault_ == "perturb" && Communicator::world().rank() == rank_) perturb();
  }
  std::string name() const override { return inner_->name(); }
  std::string describe() const override { return inner_->describe(); }
  nn::Module& model() override { return inner_->model(); }
  OptimizerDefaults optimizer_defaults() const override { return inner_->optimizer_defaults(); }
  size_t train_examples_per_epoch() override { return inner_->train_examples_per_epoch(); }
  bool splits_batches() const override { return fault_ != "unsplittable" && inner_->splits_batches(); }
  void set_data_shard(size_t rank, size_t ranks) override { inner_->set_data_shard(rank, ranks); }
  BatchLoss next_batch_loss(size_t batch_size) override {
    if (++calls_ == at_ && Communicator::world().rank() == rank_) {
      if (fault_ == "kill") std::raise(SIGKILL);
      if (fault_ == "stop") std::raise(SIGSTOP);  // alive but silent: the watchdog must end the job
      else perturb(fault_ == "nan" ? std::numeric_limits<float>::quiet_NaN() : 1e-3f);
    }
    return inner_->next_batch_loss(batch_size);
  }
  Scalars train_metrics(const Counts& c) const override { return inner_->train_metrics(c); }
  Evaluation evaluate(size_t batch_size) override { return inner_->evaluate(batch_size); }
  nlohmann::json data_state() const override { return inner_->data_state(); }
  void restore_data_state(const nlohmann::json& s) override { inner_->restore_data_state(s); }
  void save(const std::string& dir, const std::function<void(const std::string&)>& extra) const override { inner_->save(dir, extra); }

 private:
  // Adds `by` to a weight, as a flipped bit or a stray write would: the first parameter's first
  // element, or for a NaN (a run diverging on one rank) a LayerNorm weight's, which every token reads.
  void perturb(float by = 1e-3f) {
    const auto params = inner_->model().named_parameters();
    Tensor w = params.front().second;
    if (std::isnan(by))
      for (const auto& [name, t] : params)
        if (name.find("LayerNorm") != std::string::npos) {
          w = t;
          break;
        }
    w.data()[0] += by;
  }
  std::unique_ptr<Task> inner_;
  std::string fault_;
  int rank_, at_, calls_ = 0;
};

int pretrain_with_fault(int argc, char** argv) {
  TrainerOptions trainer;
  PretrainOptions task;
  std::string fault;
  int rank = 1, at = 1;
  CLI::App app("dp_check pretrain");
  PretrainOptions::table().add_to(app, task, "Data and model");
  TrainerOptions::table().add_to(app, trainer, "Training");
  std::string fault_model;
  app.add_option("--fault", fault)->required()->check(CLI::IsMember({"perturb", "kill", "stop", "nan", "setup", "unsplittable", "model"}));
  app.add_option("--fault-model", fault_model);
  app.add_option("--fault-rank", rank);
  app.add_option("--fault-at", at);
  CLI11_PARSE(app, argc, argv);
  try {
    Trainer t(trainer, BoundOptions(PretrainOptions::table(), task), [&](const TaskContext& ctx) {
      const bool faulty_rank = Communicator::world().rank() == rank;
      if (fault == "setup" && faulty_rank) throw std::runtime_error(fmt::format("rank {}'s task failed to build", rank));
      PretrainOptions own = task;
      if (fault == "model" && faulty_rank) own.model = fault_model;
      std::unique_ptr<Task> built = make_pretraining_task(own, ctx);
      if (fault == "unsplittable" && faulty_rank) throw std::runtime_error(fmt::format("rank {}'s task failed once built", rank));
      return std::make_unique<FaultyTask>(std::move(built), fault, rank, at);
    });
    t.run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "dp_check: {}\n", e.what());
    return 1;
  }
  return 0;
}

int time_allreduce(size_t floats, int repeats) {
  Communicator& comm = Communicator::world();
  std::vector<float> v(floats, 1.f);
  comm.allreduce(v.data(), v.size());  // warm-up: connections and buffers
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) comm.allreduce(v.data(), v.size());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
  if (comm.rank() == 0)
    fmt::print("all-reduce of {} floats ({:.1f} MB) over {} ranks: {:.2f} ms ({:.2f} GB/s of gradient)\n", floats,
               double(floats) * 4 / 1e6, comm.size(), s * 1e3, double(floats) * 4 / s / 1e9);
  return 0;
}

// Three linears: `a` every rank uses, `b` only rank 0, `c` none. AdamW with weight decay would
// move `c` if it were stepped with a zero gradient.
int unused_parameters() {
  Communicator& comm = Communicator::world();
  struct Net : nn::Module {
    std::shared_ptr<nn::Linear> a, b, c;
    Net() {
      a = register_module("a", std::make_shared<nn::Linear>(4, 4));
      b = register_module("b", std::make_shared<nn::Linear>(4, 4));
      c = register_module("c", std::make_shared<nn::Linear>(4, 4));
    }
  };
  manual_seed(7);  // the same weights on every rank
  Net net;
  nn::ParameterArena& arena = net.flatten_parameters();
  // A bucket per linear: rank 0 starts b's during backward, rank 1 only at finish_backward,
  // after a's (the reductions must still pair b with b).
  GradientSync sync(comm, arena, 64);
  if (sync.bucket_count() != 3) return fmt::print("expected 3 buckets, got {}\n", sync.bucket_count()), 1;
  optim::AdamW opt({{net.named_parameters(), 0.1f}}, 0.05f);
  opt.bind(arena);
  const std::vector<float> c_before = net.c->weight.to_vector();
  Generator data(100 + uint64_t(comm.rank()));  // each rank its own examples
  int failures = 0;
  for (int step = 0; step < 3; ++step) {
    net.zero_grad();
    // Step 1 accumulates two micro-batches: in the first (not reduced) only rank 1 reaches b.
    const int micros = step == 1 ? 2 : 1;
    for (int micro = 0; micro < micros; ++micro) {
      const bool last = micro + 1 == micros;
      sync.set_reducing(last);
      const Tensor h = net.a->forward(Tensor::normal({3, 4}, 0.f, 1.f, data));
      const Tensor out = comm.rank() == (last ? 0 : 1) ? net.b->forward(h) : h;
      sum(mul(out, out)).backward();
      sync.finish_backward();
    }
    sync.wait();
    if (!net.b->weight.grad().defined() || net.c->weight.grad().defined()) {
      fmt::print("rank {} step {}: b {} a gradient, c {}\n", comm.rank(), step,
                 net.b->weight.grad().defined() ? "has" : "lacks", net.c->weight.grad().defined() ? "has one" : "has none");
      ++failures;
    }
    opt.step();
  }
  try {  // replicas equal, bit for bit
    check_same_parameters(comm, arena, 3);
  } catch (const CollectiveError& e) {
    fmt::print("rank {}: {}\n", comm.rank(), e.what());
    ++failures;
  }
  if (net.c->weight.to_vector() != c_before) fmt::print("rank {}: c moved\n", comm.rank()), ++failures;
  if (failures == 0 && comm.rank() == 0) fmt::print("unused parameters: ok over {} ranks\n", comm.size());
  return failures == 0 ? 0 : 1;
}

// fail_together with rank 1 throwing WHAT ("error": a std::runtime_error, "other": an int,
// "nested": an error before an inner fail_together that rank 0 goes on into, as when rank 1 cannot
// read its --model config while rank 0 goes on to train the vocabulary): every rank must leave with
// a CollectiveError that names rank 1, and print it.
int fail_on_rank_1(const std::string& what) {
  Communicator& comm = Communicator::world();
  try {
    fail_together(comm, [&] {
      if (comm.rank() == 1 && what == "error") throw std::runtime_error("rank 1's own error");
      if (comm.rank() == 1 && what == "other") throw 7;
      if (comm.rank() == 1) throw std::runtime_error("rank 1's error before the inner agreement");
      if (what == "nested") fail_together(comm, [] {});
    });
  } catch (const CollectiveError& e) {
    fmt::print("rank {} stopped: {}\n", comm.rank(), e.what());
    std::fflush(stdout);  // before MPI_Finalize: mpirun ends the job once a rank has exited non-zero
    return 3;
  }
  fmt::print("rank {}: fail_together returned\n", comm.rank());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "compare" && argc == 5) return compare(argv[2], argv[3], std::stod(argv[4]));
  if (mode == "allreduce" && argc == 4) return time_allreduce(std::stoul(argv[2]), std::stoi(argv[3]));
  if (mode == "pretrain") return pretrain_with_fault(argc - 1, argv + 1);
  if (mode == "unused" && argc == 2) return unused_parameters();
  if (mode == "fail" && argc == 3) return fail_on_rank_1(argv[2]);
  fmt::print(stderr, "usage: dp_check compare A B TOL | dp_check pretrain --fault perturb|kill|stop|nan|setup|unsplittable|model --fault-rank R --fault-at K ... | "
                     "dp_check allreduce FLOATS REPEATS | dp_check unused | dp_check fail error|other|nested\n");
  return 2;
}
