#pragma once
// Edits of the global heap of an HDF5 file's bytes, for tests of what a reader makes of a heap
// object that claims more bytes than its collection holds.
#include <cstdint>
#include <cstring>
#include <string>

namespace pagedw2v::testing_util {

/// Adds `delta` to the size of the global heap object whose bytes are `data` (the first found,
/// in any collection of `bytes`, an HDF5 file's bytes) and returns its offset in `bytes`, or
/// std::string::npos when there is none. A collection is "GCOL", version, 3 reserved bytes, its
/// size (8 bytes), then objects: 2-byte index, 2-byte reference count, 4 reserved bytes, 8-byte
/// size, data padded to 8 bytes.
inline size_t grow_heap_object(std::string& bytes, const std::string& data, uint64_t delta) {
  const auto u64 = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  for (size_t c = bytes.find("GCOL"); c != std::string::npos; c = bytes.find("GCOL", c + 4)) {
    if (c + 16 > bytes.size()) break;
    const uint64_t size = u64(c + 8);
    if (size < 16 || size > bytes.size() - c) continue;
    for (uint64_t p = 16; p + 16 <= size;) {
      const unsigned index = static_cast<unsigned char>(bytes[c + p]) |
                             static_cast<unsigned>(static_cast<unsigned char>(bytes[c + p + 1]))
                                 << 8;
      const uint64_t object = u64(c + p + 8);
      if (index == 0 || object > size - p - 16) break;
      if (object == data.size() && bytes.compare(c + p + 16, object, data) == 0) {
        const uint64_t grown = object + delta;
        for (int i = 0; i < 8; ++i) bytes[c + p + 8 + i] = static_cast<char>(grown >> (8 * i));
        return c + p;
      }
      p += 16 + (object + 7) / 8 * 8;
    }
  }
  return std::string::npos;
}

}  // namespace pagedw2v::testing_util
