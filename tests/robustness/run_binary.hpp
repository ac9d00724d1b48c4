#pragma once
// Running the pagedw2v binary from a test: as a child process that a test can watch, signal and
// wait for (Process), or to its end (run_binary); its exit, its output, and whether a failure was
// one clear line ("pagedw2v: …" on stderr, the documented exit code, no signal, no sanitizer
// report).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../test_util.hpp"

namespace pagedw2v::testing_util {

/// Seconds a run of the binary may take before the harness kills it and fails the test with its
/// stderr. Not a measure of speed: the runs here take a few seconds at most, under the sanitizers
/// too; a run past this has hung. Below the tests' ctest timeout (tests/CMakeLists.txt), so that
/// the harness reports a hang before ctest ends the test.
constexpr double kHangSeconds = 150;

/// How a run of the binary ended.
struct RunResult {
  std::string command;
  bool exited = false;  ///< ended through exit(), not by a signal
  int code = -1;        ///< exit status when `exited`
  int signal = 0;       ///< the signal that ended it otherwise
  bool timed_out = false;
  double seconds = 0;
  std::string out;  ///< all it wrote to stdout
  std::string err;  ///< all it wrote to stderr, less the notes below
};

/// `err` less the notes of an ASan build (run with allocator_may_return_null=1) that it refused an
/// allocation, as the program asked for (`--dim 100000000`). The program's own message follows.
inline std::string without_refused_allocation_notes(const std::string& err) {
  std::string kept;
  size_t start = 0;
  while (start < err.size()) {
    size_t end = err.find('\n', start);
    end = end == std::string::npos ? err.size() : end + 1;
    const std::string line = err.substr(start, end - start);
    const bool note =
        line.rfind("==", 0) == 0 &&
        line.find("==WARNING: AddressSanitizer failed to allocate 0x") != std::string::npos;
    if (!note) kept += line;
    start = end;
  }
  return kept;
}

/// How Process starts the binary.
struct ProcessOptions {
  /// >= 0: the child may not write larger files (RLIMIT_FSIZE).
  long max_file_bytes = -1;
  /// With a file size limit: leave SIGXFSZ at its default action (it kills), as a shell with
  /// `ulimit -f` does, instead of ignoring it so that a write past the limit fails with EFBIG
  /// as on a full disk.
  bool default_sigxfsz = false;
  /// Names of the log files (NAME.stdout, NAME.stderr); empty: a new name for every process.
  std::string log_name;
  /// The file the child reads as standard input; empty: /dev/null.
  std::string stdin_path;
  /// The directory the child runs in; empty: this one.
  std::string cwd;
  /// Show the child the GPUs this process sees (CUDA_VISIBLE_DEVICES as the test started), for
  /// the GPU tests of the command line; by default it sees none.
  bool show_gpus = false;
};

/// CUDA_VISIBLE_DEVICES as this process started (unset: nullopt), read before any Process
/// hides the GPUs.
inline const std::optional<std::string>& visible_devices_at_start() {
  static const std::optional<std::string> at_start = []() -> std::optional<std::string> {
    const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
    return v == nullptr ? std::nullopt : std::optional<std::string>(v);
  }();
  return at_start;
}

/// The binary (PAGEDW2V_BINARY) running as a child process, shown no GPU unless the options say
/// so (the suite checks the
/// command line on the CPU backend, so that its timings and memory limits are the same on every
/// machine). Its stdin is /dev/null unless the options name a file; stdout and stderr go to files
/// in `log_dir`. Killed when the object goes before the process has ended.
class Process {
 public:
  Process(const std::vector<std::string>& args, const std::string& log_dir,
          const ProcessOptions& options = ProcessOptions()) {
    static int serial = 0;
    const std::string log =
        log_dir + "/" +
        (options.log_name.empty() ? "run-" + std::to_string(++serial) : options.log_name);
    err_path_ = log + ".stderr";
    out_path_ = log + ".stdout";
    command_ = "pagedw2v";
    for (const std::string& a : args) command_ += " " + a;

    std::vector<std::string> argv_storage = {PAGEDW2V_BINARY};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);

    const int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const std::string in_path = options.stdin_path.empty() ? "/dev/null" : options.stdin_path;
    const int in = ::open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (out < 0 || err < 0 || in < 0) throw std::runtime_error("cannot open the log files");
    const std::optional<std::string>& devices = visible_devices_at_start();
    if (!options.show_gpus) {
      ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
    } else if (devices) {
      ::setenv("CUDA_VISIBLE_DEVICES", devices->c_str(), 1);
    } else {
      ::unsetenv("CUDA_VISIBLE_DEVICES");
    }
    start_ = Clock::now();
    pid_ = ::fork();
    if (pid_ == 0) {
      // Only async-signal-safe calls between fork and exec.
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(err, 2);
      if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) ::_exit(126);
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      ::sigaction(SIGINT, &dfl, nullptr);
      ::sigaction(SIGTERM, &dfl, nullptr);
      if (options.max_file_bytes >= 0) {
        struct sigaction xfsz {};
        xfsz.sa_handler = options.default_sigxfsz ? SIG_DFL : SIG_IGN;
        ::sigaction(SIGXFSZ, &xfsz, nullptr);
        const struct rlimit limit = {static_cast<rlim_t>(options.max_file_bytes),
                                     static_cast<rlim_t>(options.max_file_bytes)};
        ::setrlimit(RLIMIT_FSIZE, &limit);
      }
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execv(PAGEDW2V_BINARY, argv.data());
      ::_exit(127);
    }
    ::close(out);
    ::close(err);
    ::close(in);
    if (pid_ < 0) throw std::runtime_error("fork failed");
  }

  ~Process() {
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& command() const { return command_; }

  /// True until the process has ended (it is then reaped).
  bool running() {
    if (reaped_) return false;
    if (::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    return !reaped_;
  }

  void send(int sig) { ::kill(pid_, sig); }

  /// Waits for the end; after `timeout_seconds` kills the process and says so.
  RunResult wait(double timeout_seconds = kHangSeconds) {
    RunResult r;
    r.command = command_;
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
    while (running()) {
      if (Clock::now() > deadline) {
        r.timed_out = true;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status_, 0);
        reaped_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    r.exited = WIFEXITED(status_);
    r.code = r.exited ? WEXITSTATUS(status_) : -1;
    r.signal = WIFSIGNALED(status_) ? WTERMSIG(status_) : 0;
    r.err = without_refused_allocation_notes(read_file(err_path_));
    r.out = read_file(out_path_);
    return r;
  }

 private:
  using Clock = std::chrono::steady_clock;
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
  Clock::time_point start_;
  std::string command_;
  std::string err_path_;
  std::string out_path_;
};

/// Runs the binary with `args` to its end (killed after `timeout_seconds`); its output goes to
/// run.stdout and run.stderr in `log_dir`.
inline RunResult run_binary(const std::vector<std::string>& args, const std::string& log_dir,
                            double timeout_seconds = kHangSeconds) {
  ProcessOptions options;
  options.log_name = "run";
  Process p(args, log_dir, options);
  return p.wait(timeout_seconds);
}

/// Polls `done` every 200 µs while `p` runs; false when `p` ends first or after `timeout_seconds`
/// (a run that has hung).
inline bool wait_until(Process& p, const std::function<bool()>& done,
                       double timeout_seconds = kHangSeconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    if (!p.running()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

/// Stops `p` (SIGSTOP) and returns true once it is stopped; false when it ended first.
inline bool freeze(Process& p) {
  p.send(SIGSTOP);
  for (;;) {
    if (!p.running()) return false;
    const std::string stat = read_file("/proc/" + std::to_string(p.pid()) + "/stat");
    // The state follows the command name in parentheses: T when stopped.
    const size_t close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'T') {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

/// The children of process `pid` now (none once it has ended).
inline std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> found;
  std::error_code ec;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    std::istringstream in(read_file(task.path().string() + "/children"));
    for (pid_t child = 0; in >> child;) found.push_back(child);
  }
  return found;
}

/// The command, how it ended, and its stderr.
inline std::string describe(const RunResult& r) {
  std::string s = "`" + r.command + "` ";
  if (r.timed_out) s += "timed out, ";
  s += r.exited ? "exited " + std::to_string(r.code) : "died of signal " + std::to_string(r.signal);
  return s + "; stderr:\n" + r.err;
}

/// A report that only a crash, an uncaught exception or a sanitizer would print.
inline bool has_crash_report(const std::string& err) {
  for (const char* marker : {"terminate called", "Sanitizer", "runtime error:", "Segmentation",
                             "core dumped", "HDF5-DIAG"}) {
    if (err.find(marker) != std::string::npos) return true;
  }
  return false;
}

/// Empty when `r` failed with exit `code` and one line on stderr that starts with "pagedw2v: "
/// and holds `fragment`; otherwise what went wrong.
inline std::string clear_failure_problem(const RunResult& r, int code = 1,
                                         const std::string& fragment = "") {
  const std::string where = r.command + "\nstderr: " + r.err;
  if (r.timed_out) return "timed out: " + where;
  if (!r.exited) return "killed by signal " + std::to_string(r.signal) + ": " + where;
  if (r.code != code) return "exit " + std::to_string(r.code) + ": " + where;
  if (r.err.rfind("pagedw2v: ", 0) != 0 || r.err.find('\n') != r.err.size() - 1) {
    return "not one 'pagedw2v: ' line: " + where;
  }
  if (has_crash_report(r.err)) return "a crash report: " + where;
  if (r.err.find(fragment) == std::string::npos) return "no '" + fragment + "': " + where;
  return "";
}

/// Exit status `code`, and exactly one line "pagedw2v: …" on stderr that contains `needle`.
inline ::testing::AssertionResult fails_cleanly(const RunResult& r, int code,
                                                const std::string& needle = "") {
  const std::string problem = clear_failure_problem(r, code, needle);
  if (!problem.empty()) return ::testing::AssertionFailure() << problem;
  return ::testing::AssertionSuccess();
}

/// Whether `path` exists (a dangling link counts).
inline bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

/// `args` with `--name value`, the value replaced when the option is there already.
inline std::vector<std::string> with(std::vector<std::string> args, const std::string& name,
                                     const std::string& value) {
  const auto it = std::find(args.begin(), args.end(), "--" + name);
  if (it != args.end() && it + 1 != args.end()) {
    *(it + 1) = value;
  } else {
    args.insert(args.end(), {"--" + name, value});
  }
  return args;
}

}  // namespace pagedw2v::testing_util
