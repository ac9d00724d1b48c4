#pragma once
/// @file host_table.hpp
/// Embedding and optimizer-state tables in host memory: `rows × dim` values, row-major, 64-byte
/// aligned, stored as fp32 or as 16-bit values (storage.hpp: bf16 or fp16, read as fp32 through
/// read_row/copy_to and written through write_row/copy_from with rounding to nearest even). A table
/// is contiguous (row r at data() + r·dim) or one of several interleaved tables sharing one
/// allocation (row r at data() + r·stride(), the rows of one id side by side), which paged training
/// moves as one piece of memory per id. The memory comes from a HostAllocator, so the CUDA build
/// can hand out pinned memory without the trainer, checkpoints or exports knowing.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/storage.hpp"

namespace pagedw2v {

/// Where host tables live. The default allocates pageable, aligned memory.
class HostAllocator {
 public:
  virtual ~HostAllocator() = default;
  /// Returns `bytes` of 64-byte aligned memory, or nullptr when there is not enough.
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p, size_t bytes) noexcept = 0;
  virtual std::string name() const = 0;
  /// True when fresh memory from allocate() is already zero (so tables need no clearing pass).
  virtual bool zeroes() const { return false; }
};

/// The process-wide pageable allocator.
HostAllocator& default_host_allocator();

class HostTable {
 public:
  HostTable() = default;
  /// Allocates `rows × dim` values of `storage`, zeroed. Throws Error naming `what` and its size
  /// when memory runs out, with `hint` (e.g. "lower --dim or --max-vocab") appended.
  HostTable(uint64_t rows, uint32_t dim, const std::string& what, const std::string& hint,
            HostAllocator& allocator = default_host_allocator(), Storage storage = Storage::kFp32);
  /// One zeroed allocation holding `count` tables of `rows × dim`, interleaved: row r of table t
  /// at base + (r·count + t)·dim values, so the rows of one id lie side by side. `what` names the
  /// whole (for the error when memory runs out).
  static std::vector<HostTable> interleaved(uint64_t rows, uint32_t dim, uint32_t count,
                                            const std::string& what, const std::string& hint,
                                            HostAllocator& allocator = default_host_allocator(),
                                            Storage storage = Storage::kFp32);
  HostTable(HostTable&& other) noexcept;
  HostTable& operator=(HostTable&& other) noexcept;
  HostTable(const HostTable&) = delete;
  HostTable& operator=(const HostTable&) = delete;

  uint64_t rows() const { return rows_; }
  uint32_t dim() const { return dim_; }
  Storage storage() const { return storage_; }
  /// Bytes of one stored value: 4 (fp32) or 2.
  uint32_t value_bytes() const { return storage_bytes(storage_); }
  /// Values from one row to the next: dim() when contiguous.
  uint64_t stride() const { return stride_; }
  bool contiguous() const { return stride_ == dim_; }
  /// Bytes of the table's values (rows × dim stored values), not of the memory it lies in.
  size_t bytes() const { return static_cast<size_t>(rows_) * dim_ * value_bytes(); }
  /// Row 0 as floats: fp32 storage only (null otherwise). Only a contiguous table may be read
  /// past a row through it.
  float* data() { return data_; }
  const float* data() const { return data_; }
  /// Row r as floats: fp32 storage only.
  float* row(uint64_t r) { return data_ + r * stride_; }
  const float* row(uint64_t r) const { return data_ + r * stride_; }
  /// Row 0 in its storage (floats or 16-bit values).
  void* raw() { return raw_; }
  const void* raw() const { return raw_; }
  /// Row r in its storage.
  void* raw_row(uint64_t r) { return static_cast<char*>(raw_) + r * stride_ * value_bytes(); }
  const void* raw_row(uint64_t r) const {
    return static_cast<const char*>(raw_) + r * stride_ * value_bytes();
  }
  /// Row r as fp32 (exact: every stored value is an fp32 value) into `out` (dim floats).
  void read_row(uint64_t r, float* out) const;
  /// Row r from `in` (dim floats), rounded to the nearest stored value (ties to even).
  void write_row(uint64_t r, const float* in);
  /// Rows first … first + n − 1 as fp32 into `out` (n × dim floats).
  void read_rows(uint64_t first, uint64_t n, float* out) const;
  /// The allocation the table lies in, shared by interleaved tables.
  void* block() const;
  size_t block_bytes() const;

  /// Copies the values out to `rows × dim` contiguous floats, or in from them (rounded to the
  /// nearest stored value).
  void copy_to(float* out) const;
  void copy_from(const float* in);
  /// Copies the stored values, bit for bit, into `out`, a table of the same shape and storage
  /// (any layout).
  void copy_values_to(HostTable& out) const;
  void fill(float value);
  /// Whether every stored bit of every value is 0 (+0.0), rows read by up to `threads` threads.
  bool all_zero(uint32_t threads = 1) const;

 private:
  struct Block;
  HostTable(std::shared_ptr<Block> block, void* raw, uint64_t rows, uint32_t dim, uint64_t stride,
            Storage storage);

  std::shared_ptr<Block> block_;
  void* raw_ = nullptr;
  float* data_ = nullptr;  ///< raw_ when fp32, else null
  Storage storage_ = Storage::kFp32;
  uint64_t rows_ = 0;
  uint32_t dim_ = 0;
  uint64_t stride_ = 0;
};

}  // namespace pagedw2v
