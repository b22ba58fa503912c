#pragma once
// Sets the process's default execution options (nn/execution.hpp) for one scope, as a program
// does at start, for tests whose models are built inside the code under test.
#include "nn/execution.hpp"

namespace xg::test {

class ScopedDefaultExecution {
 public:
  explicit ScopedDefaultExecution(const nn::ExecutionOptions& options) : saved_(nn::default_execution()) {
    nn::set_default_execution(options);
  }
  ~ScopedDefaultExecution() { nn::set_default_execution(saved_); }
  ScopedDefaultExecution(const ScopedDefaultExecution&) = delete;
  ScopedDefaultExecution& operator=(const ScopedDefaultExecution&) = delete;

 private:
  nn::ExecutionOptions saved_;
};

}  // namespace xg::test
