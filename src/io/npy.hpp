#pragma once
/// @file npy.hpp
/// NumPy `.npy` files holding a 2-D float32 matrix: what `np.save` writes and `np.load` reads.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/atomic_file.hpp"

namespace pagedw2v {

/// A matrix read from a `.npy` file: `rows × cols` floats, row-major.
struct NpyMatrix {
  std::vector<float> data;
  uint64_t rows = 0;
  uint32_t cols = 0;
};

/// Writes `rows × cols` row-major floats as a format 1.0 `.npy` file (dtype `<f4`, C order), with
/// the header padded so that the data starts at a multiple of 64 bytes. The file appears under
/// `path` only once it is complete. Throws Error naming `path` on failure.
void write_npy(const std::string& path, const float* data, uint64_t rows, uint32_t cols);
/// The same, row r read from data + r · stride.
void write_npy(const std::string& path, const float* data, uint64_t rows, uint32_t cols,
               uint64_t stride);

/// The same, the rows produced `chunk_rows` at a time by `rows_at(first, n, out)`, which fills
/// out with rows first … first + n − 1 (n × cols floats): tables stored in another format are
/// converted a few MiB at a time.
void write_npy(const std::string& path, uint64_t rows, uint32_t cols, uint64_t chunk_rows,
               const std::function<void(uint64_t, uint64_t, float*)>& rows_at);

/// The file write_npy() writes, its rows handed in order a block at a time (a distributed run's
/// rank 0 writes the rows it gathers from their owners). The file appears under `path` only when
/// commit() has checked that every row came. Throws Error naming `path` on failure.
class NpyRowWriter {
 public:
  NpyRowWriter(const std::string& path, uint64_t rows, uint32_t cols);
  /// The next `n` rows, `n × cols` row-major floats.
  void write(const float* rows, uint64_t n);
  void commit();

 private:
  std::string path_;
  uint64_t rows_;
  uint32_t cols_;
  uint64_t written_ = 0;
  AtomicFile out_;
};

/// Reads a 2-D `<f4` C-order `.npy` file of format version 1.0, 2.0 or 3.0. Throws Error naming
/// `path` for anything else (bad magic, truncation, Fortran order, another dtype or rank).
NpyMatrix read_npy(const std::string& path);

/// read_npy() of the bytes of a file already in memory (a map: read it under run_guarded());
/// errors name `path`.
NpyMatrix parse_npy(std::string_view bytes, const std::string& path);

}  // namespace pagedw2v
