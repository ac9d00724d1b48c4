#pragma once
// Running the pagedw2v binary from a test: its exit, its output, and whether a failure was one
// clear line ("pagedw2v: …" on stderr, exit 1 or 2, no signal, no sanitizer report).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../test_util.hpp"

namespace pagedw2v::testing_util {

struct RunResult {
  std::string command;
  bool exited = false;  ///< ended through exit(), not by a signal
  int code = -1;        ///< exit status when `exited`
  int signal = 0;       ///< the signal that ended it otherwise
  bool timed_out = false;
  double seconds = 0;
  std::string out;
  std::string err;
};

/// Runs PAGEDW2V_BINARY with `args`, stdin from /dev/null, stdout and stderr to files in
/// `log_dir`; kills it after `timeout_seconds`.
inline RunResult run_binary(const std::vector<std::string>& args, const std::string& log_dir,
                            double timeout_seconds = 60) {
  RunResult r;
  r.command = "pagedw2v";
  for (const std::string& a : args) r.command += " " + a;
  const std::string out_path = log_dir + "/run.stdout";
  const std::string err_path = log_dir + "/run.stderr";
  std::vector<std::string> storage = {PAGEDW2V_BINARY};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (out < 0 || err < 0 || in < 0) throw std::runtime_error("cannot open the log files");
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execv(PAGEDW2V_BINARY, argv.data());
    ::_exit(127);
  }
  ::close(out);
  ::close(err);
  ::close(in);
  if (pid < 0) throw std::runtime_error("fork failed");
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
    if (spent.count() > timeout_seconds) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.exited = WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : -1;
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
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
  if (r.err.find(fragment) == std::string::npos) return "no '" + fragment + "': " + where;
  return "";
}

}  // namespace pagedw2v::testing_util
