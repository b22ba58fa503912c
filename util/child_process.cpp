#include "util/child_process.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace xg {

namespace {
// Writes all of `text` to `fd`, retrying short writes.
void write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += size_t(n);
  }
}
}  // namespace

void run_in_child_process(const std::function<void()>& work, const std::string& what) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("{}: cannot create a pipe: {}", what, std::strerror(errno)));
  std::fflush(nullptr);  // or the child would print this process's buffered output again
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("{}: cannot start a child process: {}", what, std::strerror(errno)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    int status = 0;
    try {
      work();
    } catch (const std::exception& e) {
      write_all(fds[1], e.what());
      status = 1;
    } catch (...) {
      write_all(fds[1], "an unknown exception");
      status = 1;
    }
    std::fflush(nullptr);
    ::_exit(status);  // no atexit handlers, no static destructors: they belong to the parent
  }
  ::close(fds[1]);
  std::string message;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    message.append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(fmt::format("{}: lost the child process: {}", what, std::strerror(errno)));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (!message.empty()) throw std::runtime_error(message);
  if (WIFSIGNALED(status))
    throw std::runtime_error(fmt::format("{}: the library crashed ({})", what, strsignal(WTERMSIG(status))));
  throw std::runtime_error(fmt::format("{}: the library ended the process with status {} (its message, if any, is above)", what,
                                       WEXITSTATUS(status)));
}

}  // namespace xg
