#pragma once
/// @file atomic_file.hpp
/// Writing files so that readers see either the old file or the complete new one, in directories
/// that others may share.
///
/// Temporary files are named `PATH.RANDOM.tmp-PID` and created exclusively (O_CREAT | O_EXCL |
/// O_NOFOLLOW), so a file or link planted beside PATH is never written through. The bytes are
/// flushed (and fsync'ed, unless the writing thread's FsyncScope says not to), and only then
/// renamed onto PATH. If the writer is destroyed before
/// commit() (an exception, a full disk), the temporary file is removed. The `.tmp-PID` suffix lets
/// a later run in the same directory find what a killed run left behind (remove_stale_temps).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace pagedw2v {

/// Whether commits on the calling thread fsync the file and its directory (the default: yes).
/// Either way a file appears under its name only complete (temporary name, then rename); without
/// fsync, a machine that fails right after may lose the newest files (a process that is killed
/// cannot). Threads that write parts of one output for the caller take the caller's setting.
bool fsync_on_commit();

/// Sets whether the calling thread's commits fsync, for the scope's life.
class FsyncScope {
 public:
  explicit FsyncScope(bool fsync);
  ~FsyncScope();
  FsyncScope(const FsyncScope&) = delete;
  FsyncScope& operator=(const FsyncScope&) = delete;

 private:
  bool previous_;
};

class AtomicFile {
 public:
  /// Creates the temporary file; throws Error naming `path` when it cannot be created.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// The stream to write to (buffered, 4 MiB; larger writes go straight to the file).
  std::FILE* stream() { return file_; }
  /// Name of the temporary file (for libraries that write by name, such as HDF5).
  const std::string& temp_path() const { return temp_path_; }
  /// Writes bytes; throws Error (naming the path, e.g. "No space left on device") on failure.
  void write(const void* data, size_t bytes);
  void write(const std::string& s) { write(s.data(), s.size()); }
  /// Writes `rows` rows of `row_bytes` bytes, which lie `stride_bytes` apart from `data` on:
  /// large payloads are cut among threads, each writing its range with pwrite at its place in
  /// the file (rows that do not lie side by side gathered a few MiB at a time). Throws as write().
  void write_rows(const void* data, uint64_t rows, size_t row_bytes, size_t stride_bytes);
  /// Flushes, fsyncs (see fsync_on_commit) and renames onto the final path; throws Error on any
  /// failure.
  void commit();

 private:
  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
  int slot_ = -1;
};

/// Renames `temp_path` onto `path` after fsync'ing it, then fsyncs the directory (both as
/// fsync_on_commit says). For files
/// written by name by another library. Throws Error on failure (and removes `temp_path`).
void commit_file(const std::string& temp_path, const std::string& path);

/// Creates an empty temporary file beside `path` (exclusively, never through a link) and returns
/// its name, for a file about to replace `path`. The caller removes it or commits it. Throws Error
/// naming `path` when it cannot be created.
std::string temp_name_for(const std::string& path);

/// Whether a directory entry's name is a temporary name of this scheme (`….tmp-DIGITS`); sets
/// `*pid` to the process that made it.
bool is_temp_name(const std::string& name, long* pid = nullptr);

/// Removes the temporary files (and temporary directories, with what they hold) in `dir` that were
/// left by processes that no longer run; those of a live process are kept. Returns how many
/// entries were removed. Call it while holding the directory's OutputLock.
size_t remove_stale_temps(const std::string& dir);

/// Removes, at once and from a signal handler (it is async-signal-safe), every temporary file and
/// temporary directory (with what it holds) that this process created through this file's
/// functions and has neither committed nor removed yet, so that a command stopped by a signal
/// leaves nothing behind. Returns false, removing nothing, while an output set is being moved into
/// its directory (SetCommitScope): the set is then left to complete. After it returned true, a
/// SetCommitScope can no longer begin (it throws), so that no set is half moved in afterwards.
bool remove_own_temps_now();

/// Marks an output set's files being moved into their directory, for remove_own_temps_now().
/// Throws Error when the process is stopping (remove_own_temps_now() ran).
class SetCommitScope {
 public:
  SetCommitScope();
  ~SetCommitScope();
  SetCommitScope(const SetCommitScope&) = delete;
  SetCommitScope& operator=(const SetCommitScope&) = delete;
};

/// Records a temporary directory that this process made, for remove_own_temps_now(); returns a
/// handle for forget_temp_dir() (negative when it could not be recorded).
int remember_temp_dir(const std::string& dir);
/// The directory of `handle` is gone or committed: remove_own_temps_now() leaves it.
void forget_temp_dir(int handle);

/// Points the symbolic link `link` at `target` atomically: a new link under a temporary name is
/// renamed over the old one. Throws Error on failure.
void replace_symlink(const std::string& target, const std::string& link);

/// Creates `dir` and its parents where missing; throws Error naming the part that cannot be
/// created or is not a directory.
void make_directories(const std::string& dir);

/// An exclusive advisory lock (flock) on a directory, held for the object's life, so that two runs
/// cannot write into one output directory at once.
class OutputLock {
 public:
  OutputLock() = default;
  /// Takes the lock without waiting; throws Error("output directory 'DIR' is in use by another
  /// pagedw2v process") when another process holds it.
  explicit OutputLock(const std::string& dir);
  ~OutputLock();
  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace pagedw2v
