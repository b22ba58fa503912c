// serve::Batcher: which jobs run together (one group, oldest first, within max_batch_tokens), a
// full queue refused, a failing job failing alone, waiting only for requests on their way, and
// stop() running what is queued.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "serve/batcher.hpp"
#include "serve/metrics.hpp"

using namespace xg;
using namespace std::chrono_literals;

namespace {

// Records every batch it runs (the tokens of its jobs); a batch holding a job made with `fails`
// throws, as a model's runner fails on the whole batch.
struct Recorder {
  std::mutex mutex;
  std::vector<std::vector<size_t>> batches;
  std::condition_variable released;
  bool open = true;  // false: the runner blocks until released
  std::vector<const serve::Job*> failing;

  std::shared_ptr<serve::Job> job(const std::string& group, size_t tokens, bool fails = false) {
    auto j = std::make_shared<serve::Job>();
    j->group = group;
    j->tokens = tokens;
    j->sequences = 1;
    if (fails) failing.push_back(j.get());
    j->run_batch = [this](const std::vector<serve::Job*>& jobs) {
      std::unique_lock<std::mutex> lock(mutex);
      released.wait(lock, [&] { return open; });
      std::vector<size_t> tokens;
      for (auto* j : jobs) tokens.push_back(j->tokens);
      batches.push_back(tokens);
      for (auto* j : jobs)
        if (std::find(failing.begin(), failing.end(), j) != failing.end()) throw std::runtime_error("cannot run");
    };
    return j;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    open = true;
    released.notify_all();
  }
};

void wait_for(const std::shared_ptr<serve::Job>& j) { REQUIRE(j->done.get_future().wait_for(10s) == std::future_status::ready); }

}  // namespace

TEST_CASE("Batcher: queued jobs of one group run together, oldest first, within the token budget", "[serve]") {
  serve::BatcherOptions o;
  o.max_batch_tokens = 10;
  Recorder r;
  serve::Metrics metrics;
  serve::Batcher b(o, &metrics);
  // hold the worker on a first job while the others queue
  r.open = false;
  auto first = r.job("a", 1);
  REQUIRE(b.submit(first));
  std::this_thread::sleep_for(50ms);
  std::vector<std::shared_ptr<serve::Job>> jobs{r.job("a", 6), r.job("b", 2), r.job("a", 3), r.job("a", 2), r.job("b", 20)};
  for (auto& j : jobs) REQUIRE(b.submit(j));
  CHECK(b.depth() == 5);
  r.release();
  for (auto& j : jobs) wait_for(j);
  wait_for(first);
  // [1]; then group a from the oldest: 6 + 3 fit in 10, 2 more would not; then b: 2 (20 would
  // overflow) ; then a's 2; then b's 20 alone (larger than the budget, it still runs)
  CHECK(r.batches == std::vector<std::vector<size_t>>{{1}, {3, 6}, {2}, {2}, {20}});
  for (auto& j : jobs) CHECK(!j->error);
  CHECK_THAT(metrics.prometheus(), Catch::Matchers::Contains("xgrad_batch_size_count 5") &&
                                       Catch::Matchers::Contains("xgrad_tokens_total 34"));
}

TEST_CASE("Batcher: a full queue refuses, a failing job fails alone, stop() runs what is queued", "[serve]") {
  serve::BatcherOptions o;
  o.max_queue = 2;
  Recorder r;
  serve::Batcher b(o);
  r.open = false;
  auto running = r.job("a", 1);
  REQUIRE(b.submit(running));
  std::this_thread::sleep_for(50ms);
  auto good = r.job("a", 2), bad = r.job("a", 3, /*fails=*/true);
  REQUIRE(b.submit(good));
  REQUIRE(b.submit(bad));
  CHECK(!b.submit(r.job("a", 4)));  // two wait: the third is refused
  r.release();
  wait_for(good);
  wait_for(bad);
  CHECK(!good->error);  // the batch failed, then each job ran alone: only the bad one fails
  REQUIRE(bad->error);
  CHECK_THROWS_WITH(std::rethrow_exception(bad->error), "cannot run");
  CHECK(r.batches == std::vector<std::vector<size_t>>{{1}, {2, 3}, {2}, {3}});
  // stop() runs the queue out, then refuses
  r.open = false;
  auto blocker = r.job("a", 1);
  REQUIRE(b.submit(blocker));
  std::this_thread::sleep_for(50ms);
  auto last = r.job("a", 5);
  REQUIRE(b.submit(last));
  std::thread stopping([&] { b.stop(); });
  std::this_thread::sleep_for(50ms);
  r.release();
  stopping.join();
  wait_for(last);
  CHECK(!last->error);
  CHECK(!b.submit(r.job("a", 1)));
}

TEST_CASE("Batcher waits for announced requests up to max_wait_ms, and never for a lone one", "[serve]") {
  serve::BatcherOptions o;
  o.max_wait_ms = 2000;
  Recorder r;
  serve::Batcher b(o);
  SECTION("a lone request runs at once") {
    const auto start = std::chrono::steady_clock::now();
    serve::Batcher::Announcement a(b);
    auto j = r.job("a", 1);
    REQUIRE(a.submit(j));
    wait_for(j);
    CHECK(std::chrono::steady_clock::now() - start < 1000ms);
  }
  SECTION("a request on its way is waited for and joins the batch") {
    serve::Batcher::Announcement first(b), second(b);
    auto j1 = r.job("a", 1), j2 = r.job("a", 2);
    REQUIRE(first.submit(j1));
    std::this_thread::sleep_for(100ms);  // the worker waits for `second`
    REQUIRE(second.submit(j2));
    wait_for(j1);
    wait_for(j2);
    CHECK(r.batches == std::vector<std::vector<size_t>>{{1, 2}});
  }
  SECTION("a withdrawn announcement ends the wait") {
    auto j = r.job("a", 1);
    const auto start = std::chrono::steady_clock::now();
    {
      serve::Batcher::Announcement first(b);
      serve::Batcher::Announcement withdrawn(b);
      REQUIRE(first.submit(j));
      std::this_thread::sleep_for(100ms);
    }  // `withdrawn` refused before queueing (a bad request)
    wait_for(j);
    CHECK(std::chrono::steady_clock::now() - start < 1500ms);
  }
}
