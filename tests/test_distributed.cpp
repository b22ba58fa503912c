// Data parallelism's single-process side: a plain run is a group of one whose
// collectives change nothing, a loss is re-weighed by its terms, the weights' checksum sees one
// changed bit, and a checkpoint records its world size. The 2-rank behaviour is tested under
// mpirun by tests/data_parallel/data_parallel.sh.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "autograd/ops.hpp"
#include "nn/nn.hpp"
#include "tests/temp_path.hpp"
#include "training/checkpoints.hpp"
#include "training/data_parallel.hpp"
#include "training/distributed.hpp"
#include "training/grad_sync.hpp"
#include "training/rank_checks.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;

TEST_CASE("started without mpirun, the world is one rank whose collectives change nothing", "[distributed]") {
  Communicator& w = Communicator::world();
  REQUIRE_FALSE(Communicator::launched_by_mpi());
  CHECK(w.rank() == 0);
  CHECK(w.size() == 1);
  CHECK_FALSE(w.distributed());
  std::vector<float> f = {1.5f, -2.f};
  std::vector<double> d = {3.25};
  w.allreduce(f.data(), f.size());
  w.allreduce(d.data(), d.size(), ReduceOp::Max);
  w.start_allreduce(f.data(), f.size());
  w.wait_all();
  std::string s = "rank 0's";
  w.broadcast(s, 0);
  w.barrier();
  CHECK(f == std::vector<float>{1.5f, -2.f});
  CHECK(d == std::vector<double>{3.25});
  CHECK(s == "rank 0's");
  check_same_settings(w, {{"batch", 4}});  // one rank agrees with itself
  int ran = 0;
  fail_together(w, [&] { ++ran; });
  CHECK(ran == 1);
  // alone, an error goes through as it is (not as a CollectiveError)
  CHECK_THROWS_AS(fail_together(w, [] { throw std::invalid_argument("bad --warmup"); }), std::invalid_argument);
}

TEST_CASE("gradient buckets are capped at kMaxBuckets communicators however small --bucket-mb is", "[distributed]") {
  nn::Sequential net;
  for (size_t i = 0; i < 200; ++i) net.push_back(std::make_shared<nn::Linear>(4, 4));  // 400 parameters of 64 B or less
  nn::ParameterArena& arena = net.flatten_parameters();
  CHECK(GradientSync(Communicator::world(), arena, 1 << 20).bucket_count() == 1);
  const size_t tiny = GradientSync(Communicator::world(), arena, 1).bucket_count();
  CHECK(tiny <= GradientSync::kMaxBuckets);
  CHECK(tiny > GradientSync::kMaxBuckets / 2);  // raised just enough, not to one bucket
}

TEST_CASE("one rank's share of a batch is the whole loss, its parts unchanged", "[distributed]") {
  Communicator& w = Communicator::world();
  const Tensor mlm = Tensor::scalar(2.5f), nsp = Tensor::scalar(0.5f);
  BatchLoss b{add(mlm, nsp), {{"mlm", 2.5}, {"nsp", 0.5}}, {{"masked", 7}}, 30, {{"mlm", mlm, 7}, {"nsp", nsp, 4}}};
  const BatchLoss share = share_of_global_batch(w, b, 4);
  CHECK(share.loss.item() == 3.f);
  CHECK(share.parts == Scalars{{"mlm", 2.5}, {"nsp", 0.5}});
  // A term over nothing (no masked token in this batch) adds nothing, not NaN.
  BatchLoss empty{nsp, {{"mlm", NAN}, {"nsp", 0.5}}, {}, 30, {{"mlm", Tensor::scalar(NAN), 0}, {"nsp", nsp, 4}}};
  const BatchLoss empty_share = share_of_global_batch(w, empty, 4);
  CHECK(empty_share.loss.item() == 0.5f);
  CHECK(empty_share.parts == Scalars{{"mlm", 0.0}, {"nsp", 0.5}});  // the logged part too
  // Without terms: the loss is one mean over the batch's examples.
  CHECK(share_of_global_batch(w, BatchLoss{nsp, {}, {}, 30}, 4).loss.item() == 0.5f);
}

TEST_CASE("dropout seeds differ by rank and step and repeat for the same ones", "[distributed]") {
  CHECK(rank_step_seed(42, 0, 7) == rank_step_seed(42, 0, 7));
  CHECK(rank_step_seed(42, 0, 7) != rank_step_seed(42, 1, 7));
  CHECK(rank_step_seed(42, 0, 7) != rank_step_seed(42, 0, 8));
  CHECK(rank_step_seed(42, 0, 7) != rank_step_seed(43, 0, 7));
}

TEST_CASE("the weights' checksum changes with one bit of one parameter, and names it by entry", "[distributed]") {
  nn::Linear a(3, 2), b(2, 2);
  nn::NamedTensors params = {{"a.weight", a.weight}, {"a.bias", a.bias}, {"b.weight", b.weight}};
  nn::ParameterArena arena(params);
  const auto before = parameter_checksums(arena);
  REQUIRE(before.size() == 3);
  uint32_t bits;
  std::memcpy(&bits, b.weight.data(), 4);
  bits ^= 1;  // the lowest mantissa bit
  std::memcpy(b.weight.data(), &bits, 4);
  const auto after = parameter_checksums(arena);
  CHECK(after[0] == before[0]);
  CHECK(after[1] == before[1]);
  CHECK(after[2] != before[2]);
  check_same_parameters(Communicator::world(), arena, 1);  // one rank: nothing to differ from
}

TEST_CASE("a checkpoint records the world size that wrote it, and refuses a nonsensical one", "[distributed]") {
  const std::string dir = temp_path("xgrad_world_size");
  std::filesystem::create_directories(dir);
  TrainingState s;
  s.schedule = {optim::LrSchedule::Kind::Constant, 1e-3f, 0, 10, 0.f, 1.f};
  s.options = nlohmann::json::object();
  s.data = nlohmann::json::object();
  s.task = "mlm";
  s.world_size = 4;
  s.write(dir);
  CHECK(TrainingState::read(dir).world_size == 4);
  s.world_size = 0;
  s.write(dir);
  CHECK_THROWS_WITH(TrainingState::read(dir), Contains("world_size 0 is not a number of ranks"));
  std::filesystem::remove_all(dir);
}
