#pragma once
/// @file host_table.hpp
/// Embedding and optimizer-state tables in host memory: `rows × dim` fp32, row-major, contiguous,
/// 64-byte aligned. The memory comes from a HostAllocator, so the CUDA build can hand out pinned
/// memory without the trainer, checkpoints or exports knowing.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

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
  ~HostTable();
  HostTable(HostTable&& other) noexcept;
  HostTable& operator=(HostTable&& other) noexcept;
  HostTable(const HostTable&) = delete;
  HostTable& operator=(const HostTable&) = delete;

  uint64_t rows() const { return rows_; }
  uint32_t dim() const { return dim_; }
  size_t bytes() const { return static_cast<size_t>(rows_) * dim_ * sizeof(float); }
  float* data() { return data_; }
  const float* data() const { return data_; }
  float* row(uint64_t r) { return data_ + r * dim_; }
  const float* row(uint64_t r) const { return data_ + r * dim_; }

 private:
  void release() noexcept;

  float* data_ = nullptr;
  uint64_t rows_ = 0;
  uint32_t dim_ = 0;
  HostAllocator* allocator_ = nullptr;
};

}  // namespace pagedw2v
