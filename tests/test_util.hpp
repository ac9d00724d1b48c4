#pragma once
// Helpers shared by the tests: temporary directories and files, small training settings; with
// support/: seeds (seed.hpp), random inputs (random_data.hpp), expected errors (expect_error.hpp).

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "support/expect_error.hpp"
#include "support/random_data.hpp"
#include "support/seed.hpp"
#include "vocab/vocab.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace pagedw2v::testing_util {

/// While alive, LeakSanitizer (in ASan builds) does not record this thread's allocations: for a
/// test of a path that leaks by design (a guarded read that jumps out of a parser).
class LeaksNotChecked {
 public:
#if defined(__SANITIZE_ADDRESS__)
  LeaksNotChecked() { __lsan_disable(); }
  ~LeaksNotChecked() { __lsan_enable(); }
#else
  LeaksNotChecked() = default;
#endif
  LeaksNotChecked(const LeaksNotChecked&) = delete;
  LeaksNotChecked& operator=(const LeaksNotChecked&) = delete;
};

/// A fresh directory under the test temp dir, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                       "/pagedw2v-test-XXXXXX";
    path_ = mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Settings of a small, deterministic CPU run: one thread, min-count 1, quiet, npy output in
/// dir/out. The corpus is dir/corpus.txt, or the checkpoint `resume` when it is given.
inline Config small_cpu_config(const TempDir& dir, const std::string& out, uint32_t dim,
                               uint32_t epochs, const std::string& resume = "") {
  Config c;
  if (resume.empty()) {
    c.corpus = dir.file("corpus.txt");
    c.dim = dim;
    c.epochs = epochs;
    c.min_count = 1;
  } else {
    c.resume = resume;
  }
  c.output = dir.file(out);
  c.threads = 1;
  c.quiet = true;
  c.device = DeviceKind::kCpu;
  c.formats = {"npy"};
  return c;
}

/// The names in `dir`, sorted.
inline std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// Whether /usr/bin/python3 imports `modules` (comma-separated).
inline bool python_has(const std::string& modules) {
  return std::system(("/usr/bin/python3 -c 'import " + modules + "' >/dev/null 2>&1").c_str()) == 0;
}

/// Whether this is a CI run (the CI variable set, as CI services and .ci/run set it): there the
/// interop tests' Python packages are installed (scripts/python_deps.sh), so a test that would
/// skip for want of them fails instead.
inline bool ci_run() {
  const char* v = std::getenv("CI");
  return v != nullptr && *v != '\0' && std::string(v) != "0" && std::string(v) != "false";
}

/// Runs `script` with /usr/bin/python3 inside `dir`; returns std::system's status.
inline int run_python(const TempDir& dir, const std::string& script) {
  write_file(dir.file("check.py"), script);
  return std::system(("cd '" + dir.path() + "' && /usr/bin/python3 check.py").c_str());
}

/// The bytes of `n` floats, for bit-exact comparisons.
inline std::string bytes_of(const float* p, size_t n) {
  return std::string(reinterpret_cast<const char*>(p), n * sizeof(float));
}

/// A run's log (a temporary file), read back after it ends.
class Log {
 public:
  Log() : file_(std::tmpfile(), &std::fclose) {}
  std::FILE* get() const { return file_.get(); }
  std::string text() const {
    std::fflush(file_.get());
    std::rewind(file_.get());
    std::string out;
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, file_.get())) > 0) out.append(buf, n);
    return out;
  }

 private:
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
};

/// The hot rows of the "tables paged: N hot rows …" line of a log, or −1 without one.
inline int64_t hot_rows(const std::string& log) {
  const std::string key = "tables paged: ";
  const size_t at = log.find(key);
  if (at == std::string::npos) return -1;
  return std::strtoll(log.c_str() + at + key.size(), nullptr, 10);
}

/// Compares two files four bytes (a float) at a time, naming how many differ.
inline void expect_same_bits(const std::string& a_path, const std::string& b_path) {
  const std::string a = read_file(a_path), b = read_file(b_path);
  ASSERT_FALSE(a.empty()) << a_path;
  ASSERT_EQ(a.size(), b.size()) << a_path << " and " << b_path;
  size_t differ = 0;
  for (size_t i = 0; i + 4 <= a.size(); i += 4) differ += a.compare(i, 4, b, i, 4) != 0;
  EXPECT_EQ(differ, 0u) << a_path << " and " << b_path << ": " << differ << " of " << a.size() / 4
                        << " words differ";
}

/// Runs `binary` with `args` and returns its peak resident memory in bytes (0 if it failed);
/// the last of `args` names where its stderr goes (it is not passed on), read into `err`.
inline uint64_t peak_rss_of_run(const std::string& binary, const std::vector<std::string>& args,
                                std::string* err) {
  const std::string err_file = args.back() + ".stderr";
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    std::string bin = binary;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    copy.pop_back();
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::freopen(err_file.c_str(), "w", stderr);
    std::freopen("/dev/null", "w", stdout);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  *err = read_file(err_file);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace pagedw2v::testing_util

/// Skips the test when /usr/bin/python3 cannot import `modules` (comma-separated), or fails it
/// when CI is set.
#define PAGEDW2V_REQUIRE_PYTHON(modules)                                             \
  do {                                                                               \
    if (!::pagedw2v::testing_util::python_has(modules)) {                            \
      if (::pagedw2v::testing_util::ci_run()) {                                      \
        GTEST_FAIL() << "CI is set but /usr/bin/python3 cannot import " << (modules) \
                     << " (scripts/python_deps.sh installs them)";                   \
      }                                                                              \
      GTEST_SKIP() << "/usr/bin/python3 cannot import " << (modules);                \
    }                                                                                \
  } while (0)

/// Skips the test for want of an optional part of the build or of the machine (`why`: what is
/// missing), or fails it when CI is set: CI installs every optional part (scripts/deps.sh), so
/// that none goes untested there.
#define PAGEDW2V_SKIP_WITHOUT(why)                                    \
  do {                                                                \
    if (::pagedw2v::testing_util::ci_run()) {                         \
      GTEST_FAIL() << "CI is set but this test cannot run: " << (why) \
                   << " (scripts/deps.sh installs what it needs)";    \
    }                                                                 \
    GTEST_SKIP() << (why);                                            \
  } while (0)
