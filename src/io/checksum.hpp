#pragma once
/// @file checksum.hpp
/// XXH64 (Yann Collet's 64-bit xxHash, seed 0) over bytes in memory or a range of a file: the
/// integrity check our HDF5 files carry in their user block (hdf5_io.hpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pagedw2v {

/// XXH64 fed in pieces; digest() may be called at any point.
class Xxh64 {
 public:
  explicit Xxh64(uint64_t seed = 0);
  void update(const void* data, size_t bytes);
  uint64_t digest() const;

 private:
  uint64_t acc_[4];
  uint64_t seed_;
  uint64_t total_ = 0;
  unsigned char buffer_[32];
  size_t buffered_ = 0;
};

/// XXH64 of `bytes` bytes of the open file `fd` from `offset`; throws Error naming `path` when
/// they cannot be read (a short file included).
uint64_t xxh64_of_file(int fd, uint64_t offset, uint64_t bytes, const std::string& path);

/// The XXH64 of the little-endian XXH64s of consecutive `piece`-byte pieces (the last may be
/// shorter) of `bytes` bytes of the open file `fd` from `offset`: a hash of the range that up to
/// `threads` threads compute at once, a range of pieces each. Throws as xxh64_of_file.
uint64_t xxh64_of_file_pieces(int fd, uint64_t offset, uint64_t bytes, uint64_t piece,
                              uint32_t threads, const std::string& path);

/// The XXH64 of the little-endian `digests`: what xxh64_of_file_pieces() returns for the pieces'
/// digests, for a caller that hashed the pieces itself.
uint64_t xxh64_of_digests(const std::vector<uint64_t>& digests);

}  // namespace pagedw2v
