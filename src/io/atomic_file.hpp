#pragma once
/// @file atomic_file.hpp
/// Writing a file so that readers see either the old file or the complete new one: the bytes go
/// to `PATH.tmp-PID`, are flushed and fsync'ed, and only then renamed onto PATH. If the writer is
/// destroyed before commit() (an exception, a full disk), the temporary file is removed.

#include <cstdio>
#include <string>

namespace pagedw2v {

class AtomicFile {
 public:
  /// Opens the temporary file; throws Error naming `path` when it cannot be created.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// The stream to write to (buffered, 1 MiB).
  std::FILE* stream() { return file_; }
  /// Name of the temporary file (for libraries that write by name, such as HDF5).
  const std::string& temp_path() const { return temp_path_; }
  /// Writes bytes; throws Error (naming the path, e.g. "No space left on device") on failure.
  void write(const void* data, size_t bytes);
  void write(const std::string& s) { write(s.data(), s.size()); }
  /// Flushes, fsyncs and renames onto the final path; throws Error on any failure.
  void commit();

 private:
  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

/// Renames `temp_path` onto `path` after fsync'ing it, then fsyncs the directory. For files
/// written by name by another library. Throws Error on failure (and removes `temp_path`).
void commit_file(const std::string& temp_path, const std::string& path);

/// A temporary name beside `path` for a file about to replace it.
std::string temp_name_for(const std::string& path);

}  // namespace pagedw2v
