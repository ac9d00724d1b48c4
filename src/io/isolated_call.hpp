#pragma once
/// @file isolated_call.hpp
/// Running a parse of an untrusted file in a child process, so that a library that crashes or
/// hangs on it (libhdf5 on a damaged file) ends with one clear error instead of the process.

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "base/error.hpp"

namespace pagedw2v {

/// What an isolated call throws when the child did not come back with an answer: it crashed,
/// ran out of time or memory. The file it read is damaged, and another read of it would only
/// take as long again.
class DamagedFile : public Error {
 public:
  using Error::Error;
};

/// Limits for an isolated call.
struct IsolationLimits {
  /// Processor time the child may use (RLIMIT_CPU; 0: no limit). A parse that loops ends here,
  /// whatever else the machine runs: the limit that a slow but sound parse does not meet only
  /// because the machine is busy.
  double cpu_seconds = 0;
  /// Wall-clock time before the child is killed: the bound of a child that waits rather than
  /// computes, set well above cpu_seconds.
  double seconds = 5.0;
  uint64_t memory_bytes = 0;  ///< address space the child may add (0: no limit)
  /// Held while the process forks: a lock that the child must not find taken (the HDF5 write
  /// lock, so that no thread is inside libhdf5 when its state is copied into the child).
  std::mutex* fork_lock = nullptr;
};

/// Runs `fn` in a forked child. Returns when `fn` returned there. Throws Error(prefix + message)
/// with the message of an Error that `fn` threw there, DamagedFile(prefix + "…") when the child
/// died by a signal, ran out of memory or exceeded a time limit, and Error(prefix + "…") when
/// it could not be started. The child's stderr is discarded, it dumps no core, and it ends with
/// _exit (no atexit handlers, no stdio flush).
void run_isolated(const std::string& prefix, const IsolationLimits& limits,
                  const std::function<void()>& fn);

/// run_isolated of a function whose result comes back: what `fn` returned in the child. For
/// small results that this process must not parse itself (a damaged file's parse by a library
/// can differ from one process to the next, so a clean parse in the child does not make the
/// same parse safe here).
std::string run_isolated_reply(const std::string& prefix, const IsolationLimits& limits,
                               const std::function<std::string()>& fn);

}  // namespace pagedw2v
