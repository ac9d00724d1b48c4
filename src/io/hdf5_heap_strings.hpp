#pragma once
/// @file hdf5_heap_strings.hpp
/// Variable-length strings of an HDF5 dataset read from the file's bytes, without libhdf5: the
/// objects of its global heap collections are checked against the collection that holds them
/// before a byte of them is taken (libhdf5 1.10 copies an object as long as the file says, past
/// its collection). Internal to src/io.

#include <cstdint>
#include <string>
#include <vector>

namespace pagedw2v::detail {

/// The bytes of an HDF5 file that heap strings are read from.
struct HeapStringSource {
  int fd = -1;
  uint64_t file_size = 0;
  uint64_t base =
      0;  ///< the file's base address (its user block's size): heap addresses count from it
};

/// The `n` strings whose heap IDs (HDF5's variable-length disk form with 8-byte addresses and
/// lengths: a 4-byte length, the collection's address, a 4-byte object index; little-endian) lie
/// at `at` of the file, `16·n` bytes, each up to its first NUL (as libhdf5 gives them); a string
/// of length 0 is empty. Throws
/// Error(prefix + label + " is damaged (…)") when an ID or a collection does not hold together:
/// a collection outside the file or without its signature, an object that runs past its
/// collection or is named twice, an ID naming a missing object or a length other than its
/// object's.
std::vector<std::string> read_heap_strings(const HeapStringSource& file, uint64_t at, uint64_t n,
                                           const std::string& prefix, const std::string& label);

}  // namespace pagedw2v::detail
