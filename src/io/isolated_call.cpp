#include "io/isolated_call.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "base/error.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define PAGEDW2V_ISOLATED_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PAGEDW2V_ISOLATED_ASAN 1
#endif
#endif

namespace pagedw2v {
namespace {

constexpr char kOk = 'O';
constexpr char kFailed = 'E';
constexpr char kNoMemory = 'M';
constexpr size_t kMaxMessage = 4096;

void write_all(int fd, const char* data, size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::write(fd, data, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    bytes -= static_cast<size_t>(n);
  }
}

#ifndef PAGEDW2V_ISOLATED_ASAN
// The address space this process maps now, from /proc/self/statm (0 when unknown). Not under
// AddressSanitizer, whose reservation would leave the limit meaningless (see child()).
uint64_t mapped_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long pages = 0;
  const int got = std::fscanf(f, "%llu", &pages);
  std::fclose(f);
  return got == 1 ? pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}
#endif

[[noreturn]] void child(int fd, const IsolationLimits& limits,
                        const std::function<std::string()>& fn) {
  const int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) ::dup2(null, STDERR_FILENO);
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  if (limits.cpu_seconds > 0) {
    // SIGXCPU at the soft limit; SIGKILL a second later should the child catch or ignore it.
    const auto soft = static_cast<rlim_t>(std::ceil(limits.cpu_seconds));
    const rlimit r{soft, soft + 1};
    ::setrlimit(RLIMIT_CPU, &r);
  }
#ifndef PAGEDW2V_ISOLATED_ASAN
  // AddressSanitizer reserves terabytes of address space up front: no limit under it.
  if (limits.memory_bytes > 0) {
    const uint64_t now = mapped_bytes();
    if (now > 0) {
      const rlim_t cap = static_cast<rlim_t>(now + limits.memory_bytes);
      const rlimit r{cap, cap};
      ::setrlimit(RLIMIT_AS, &r);
    }
  }
#endif
  char status = kOk;
  std::string message;
  try {
    message = fn();  // the reply, after the status
  } catch (const std::bad_alloc&) {
    status = kNoMemory;
  } catch (const std::exception& e) {
    status = kFailed;
    message = e.what();
  } catch (...) {
    status = kFailed;
    message = "unknown failure";
  }
  if (status != kOk && message.size() > kMaxMessage) message.resize(kMaxMessage);
  write_all(fd, &status, 1);
  write_all(fd, message.data(), message.size());
  ::_exit(0);
}

}  // namespace

void run_isolated(const std::string& prefix, const IsolationLimits& limits,
                  const std::function<void()>& fn) {
  (void)run_isolated_reply(prefix, limits, [&] {
    fn();
    return std::string();
  });
}

std::string run_isolated_reply(const std::string& prefix, const IsolationLimits& limits,
                               const std::function<std::string()>& fn) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(prefix + "cannot create a pipe to check the file apart: " + std::strerror(errno));
  }
  std::fflush(nullptr);  // nothing buffered is written twice
  std::unique_lock<std::mutex> fork_lock;
  if (limits.fork_lock != nullptr) fork_lock = std::unique_lock<std::mutex>(*limits.fork_lock);
  const pid_t pid = ::fork();
  if (fork_lock.owns_lock()) fork_lock.unlock();  // in the child too: its copy is its own
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(prefix + "cannot start a process to check the file apart: " + std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], limits, fn);
  }
  ::close(fds[1]);

  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(limits.seconds * 1000));
  std::string reply;
  bool timed_out = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buf[1 << 16];  // a pipe's default capacity
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  const double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                     1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  const bool out_of_cpu =
      WIFSIGNALED(status) &&
      (WTERMSIG(status) == SIGXCPU ||
       (WTERMSIG(status) == SIGKILL && limits.cpu_seconds > 0 && cpu >= limits.cpu_seconds));
  if (timed_out || out_of_cpu) {
    char secs[64];
    if (timed_out) {
      std::snprintf(secs, sizeof secs, "%.0f s", limits.seconds);
    } else {
      std::snprintf(secs, sizeof secs, "%.0f s of processor time", std::ceil(limits.cpu_seconds));
    }
    throw DamagedFile(prefix + "reading it did not finish within " + secs +
                      " (the file is damaged or not a file this program reads)");
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
    throw DamagedFile(prefix + "the HDF5 library crashed reading it (signal " +
                      std::to_string(WTERMSIG(status)) + "); the file is damaged");
  }
  if (!reply.empty() && reply[0] == kNoMemory) {
    throw DamagedFile(prefix + "not enough memory to read it");
  }
  if (WIFSIGNALED(status)) {  // SIGKILL from outside: the kernel's OOM killer
    throw DamagedFile(prefix + "the HDF5 library was killed reading it (out of memory?)");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty()) {
    // A sanitizer's report ends the child with a status of its own.
    throw DamagedFile(prefix + "the HDF5 library crashed reading it (exit status " +
                      std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                      "); the file is damaged");
  }
  if (reply[0] == kFailed) throw Error(reply.substr(1));
  if (reply[0] != kOk) throw Error(prefix + "reading it failed");
  return reply.substr(1);
}

}  // namespace pagedw2v
