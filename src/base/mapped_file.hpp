#pragma once
/// @file mapped_file.hpp
/// A read-only memory map of a whole file (RAII, move-only). An empty file maps to an empty view.
///
/// A mapped file that another process truncates while it is read raises SIGBUS on the pages past
/// its new end. Every read of a map goes through run_guarded() (MappedFile::read() does), which
/// turns that signal into an Error naming the file instead of ending the process.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace pagedw2v {

class MappedFile {
 public:
  /// Maps `path`; throws Error naming the path when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The bytes; read them inside run_guarded() (or read()).
  std::string_view view() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  /// Returns f(view()), run under run_guarded() naming the path: a file truncated while `f`
  /// reads it throws Error. (What `f` allocated is then not freed; the error ends the command.)
  template <class F>
  auto read(F&& f) const;

 private:
  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

/// Runs `f` so that a SIGBUS from reading a truncated mapped file throws Error ("WHAT changed
/// while it was read (truncated?); read it again") instead of ending the process. The signal
/// unwinds `f` without destructors: `f` must not hold a lock on that path, and what it allocated
/// is not freed.
void run_guarded(const std::function<void()>& f, const char* what);

template <class F>
auto MappedFile::read(F&& f) const {
  using Result = decltype(f(view()));
  if constexpr (std::is_void_v<Result>) {
    run_guarded([&] { f(view()); }, ("'" + path_ + "'").c_str());
  } else {
    Result result{};
    run_guarded([&] { result = f(view()); }, ("'" + path_ + "'").c_str());
    return result;
  }
}

}  // namespace pagedw2v
