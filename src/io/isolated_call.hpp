#pragma once
/// @file isolated_call.hpp
/// Running a parse of an untrusted file in a child process, so that a library that crashes or
/// hangs on it (libhdf5 on a damaged file) ends with one clear error instead of the process.

#include <cstdint>
#include <functional>
#include <string>

#include "error.hpp"

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
  double seconds = 5.0;       ///< wall-clock time before the child is killed
  uint64_t memory_bytes = 0;  ///< address space the child may add (0: no limit)
};

/// Runs `fn` in a forked child. Returns when `fn` returned there. Throws Error(prefix + message)
/// with the message of an Error that `fn` threw there, DamagedFile(prefix + "…") when the child
/// died by a signal, ran out of memory or exceeded the time limit, and Error(prefix + "…") when
/// it could not be started. The
/// child's stderr is discarded; it ends with _exit (no atexit handlers, no stdio flush).
void run_isolated(const std::string& prefix, const IsolationLimits& limits,
                  const std::function<void()>& fn);

/// run_isolated of a function whose result comes back: what `fn` returned in the child. For
/// small results that this process must not parse itself (a damaged file's parse by a library
/// can differ from one process to the next, so a clean parse in the child does not make the
/// same parse safe here).
std::string run_isolated_reply(const std::string& prefix, const IsolationLimits& limits,
                               const std::function<std::string()>& fn);

}  // namespace pagedw2v
