#pragma once
/// @file mapped_file.hpp
/// A read-only memory map of a whole file (RAII, move-only). An empty file maps to an empty view.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

  std::string_view view() const { return {data_, size_}; }
  size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace pagedw2v
