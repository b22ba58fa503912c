// Work run in a child process: what a library does to end it becomes an error here.
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <stdexcept>

#include "util/child_process.hpp"

using Catch::Matchers::Contains;

TEST_CASE("run_in_child_process turns a child's exception, exit or crash into an error, and returns after success",
          "[child_process]") {
  int here = 0;
  xg::run_in_child_process([&] { here = 1; }, "[test] nothing");
  CHECK(here == 0);  // the child's memory is its own
  CHECK_THROWS_WITH(xg::run_in_child_process([] { throw std::invalid_argument("[lib] bad input"); }, "[test] throwing"),
                    "[lib] bad input");
  CHECK_THROWS_WITH(xg::run_in_child_process([] { std::exit(-1); }, "[test] exiting"),
                    Contains("[test] exiting: the library ended the process with status 255"));
  CHECK_THROWS_WITH(xg::run_in_child_process([] { std::raise(SIGSEGV); }, "[test] crashing"),
                    Contains("[test] crashing: the library crashed (Segmentation fault)"));
}
