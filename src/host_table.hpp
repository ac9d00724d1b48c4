#pragma once
/// @file host_table.hpp
/// Embedding and optimizer-state tables in host memory: `rows × dim` fp32, row-major, 64-byte
/// aligned. A table is contiguous (row r at data() + r·dim) or one of several interleaved tables
/// sharing one allocation (row r at data() + r·stride(), the rows of one id side by side), which
/// paged training moves as one piece of memory per id. The memory comes from a HostAllocator, so
/// the CUDA build can hand out pinned memory without the trainer, checkpoints or exports knowing.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  /// Allocates `rows × dim` floats, zeroed. Throws Error naming `what` and its size when memory
  /// runs out, with `hint` (e.g. "lower --dim or --max-vocab") appended.
  HostTable(uint64_t rows, uint32_t dim, const std::string& what, const std::string& hint,
            HostAllocator& allocator = default_host_allocator());
  /// One zeroed allocation holding `count` tables of `rows × dim`, interleaved: row r of table t
  /// at base + (r·count + t)·dim, so the rows of one id lie side by side. `what` names the whole
  /// (for the error when memory runs out).
  static std::vector<HostTable> interleaved(uint64_t rows, uint32_t dim, uint32_t count,
                                            const std::string& what, const std::string& hint,
                                            HostAllocator& allocator = default_host_allocator());
  HostTable(HostTable&& other) noexcept;
  HostTable& operator=(HostTable&& other) noexcept;
  HostTable(const HostTable&) = delete;
  HostTable& operator=(const HostTable&) = delete;

  uint64_t rows() const { return rows_; }
  uint32_t dim() const { return dim_; }
  /// Floats from one row to the next: dim() when contiguous.
  uint64_t stride() const { return stride_; }
  bool contiguous() const { return stride_ == dim_; }
  /// Bytes of the table's values (rows × dim floats), not of the memory it lies in.
  size_t bytes() const { return static_cast<size_t>(rows_) * dim_ * sizeof(float); }
  /// Row 0. Only a contiguous table may be read past a row through it.
  float* data() { return data_; }
  const float* data() const { return data_; }
  float* row(uint64_t r) { return data_ + r * stride_; }
  const float* row(uint64_t r) const { return data_ + r * stride_; }
  /// The allocation the table lies in, shared by interleaved tables.
  void* block() const;
  size_t block_bytes() const;

  /// Copies the values out to `rows × dim` contiguous floats, or in from them.
  void copy_to(float* out) const;
  void copy_from(const float* in);
  void fill(float value);

 private:
  struct Block;
  HostTable(std::shared_ptr<Block> block, float* data, uint64_t rows, uint32_t dim,
            uint64_t stride);

  std::shared_ptr<Block> block_;
  float* data_ = nullptr;
  uint64_t rows_ = 0;
  uint32_t dim_ = 0;
  uint64_t stride_ = 0;
};

}  // namespace pagedw2v
