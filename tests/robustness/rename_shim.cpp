// A library the robustness tests preload into the real binary (LD_PRELOAD) to stop it at one
// rename(): the k-th rename whose new name lies under a directory. The binary is not changed; the
// test chooses the moment exactly, instead of racing a process with a timer.
//
//   PAGEDW2V_TEST_RENAME_UNDER  the directory: renames onto names under it (at any depth) count
//   PAGEDW2V_TEST_RENAME_AT     which of them (1 for the first)
//   PAGEDW2V_TEST_RENAME_DO     "kill": the process kills itself with SIGKILL before that rename;
//                               "hold": it creates the file PAGEDW2V_TEST_RENAME_MARK and waits
//                               there, forever (signals are still handled), without renaming
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

std::atomic<long> g_seen{0};

bool under(const char* path, const char* dir) {
  const size_t n = std::strlen(dir);
  return n > 0 && std::strncmp(path, dir, n) == 0 && path[n] == '/';
}

}  // namespace

extern "C" int rename(const char* from, const char* to) {
  using RenameFn = int (*)(const char*, const char*);
  static const RenameFn real = reinterpret_cast<RenameFn>(::dlsym(RTLD_NEXT, "rename"));
  const char* dir = std::getenv("PAGEDW2V_TEST_RENAME_UNDER");
  const char* at = std::getenv("PAGEDW2V_TEST_RENAME_AT");
  const char* action = std::getenv("PAGEDW2V_TEST_RENAME_DO");
  if (dir != nullptr && at != nullptr && action != nullptr && under(to, dir)) {
    const long k = g_seen.fetch_add(1) + 1;
    if (k == std::atol(at)) {
      if (std::strcmp(action, "kill") == 0) ::raise(SIGKILL);
      if (std::strcmp(action, "hold") == 0) {
        if (const char* mark = std::getenv("PAGEDW2V_TEST_RENAME_MARK")) {
          const int fd = ::open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
          if (fd >= 0) ::close(fd);
        }
        for (;;) ::pause();
      }
    }
  }
  return real(from, to);
}
