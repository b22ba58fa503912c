#pragma once
// Work that a library may end the process over: run in a child process, so that its exit(), abort
// or crash becomes an error this program reports.
#include <functional>
#include <string>

namespace xg {

// Runs `work` in a forked child (only this thread continues there; `work` must not need this
// process's other threads) and waits for it. A std::exception `work` throws is rethrown here as
// std::runtime_error with its message; a child that exits otherwise than by returning, or is killed
// by a signal, throws std::runtime_error naming `what` and how it ended. Output the child printed
// stays where it went (stderr: the library's own message comes first).
void run_in_child_process(const std::function<void()>& work, const std::string& what);

}  // namespace xg
