#pragma once
/// @file pinned_region.hpp
/// Pins memory that is already allocated (a host table, the encoded corpus) for as long as the
/// object lives: page-locked and mapped, so GPU kernels read and write it in place and the copy
/// engines move it at full speed. The range is locked in slabs (1 GiB by default), as
/// the benchmark's pinned allocator (apps/bench/pinned_allocator.hpp) does for new allocations, so
/// no single driver call locks tens of GB. Host-only header.

#include <cstddef>
#include <string>
#include <vector>

namespace pagedw2v {

class PinnedRegion {
 public:
  PinnedRegion() = default;
  /// Locks [p, p + bytes) (widened to whole pages). Throws Error naming `what` with `hint`
  /// appended when the driver refuses, after unlocking what it had locked.
  PinnedRegion(void* p, size_t bytes, const std::string& what, const std::string& hint,
               size_t slab_bytes = size_t{1} << 30);
  /// The same, but returns an empty region instead of throwing (the caller falls back).
  static PinnedRegion try_pin(void* p, size_t bytes, size_t slab_bytes = size_t{1} << 30);
  ~PinnedRegion();
  PinnedRegion(PinnedRegion&& other) noexcept;
  PinnedRegion& operator=(PinnedRegion&& other) noexcept;
  PinnedRegion(const PinnedRegion&) = delete;
  PinnedRegion& operator=(const PinnedRegion&) = delete;

  bool pinned() const { return !slabs_.empty(); }
  size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  bool pin(void* p, size_t bytes, size_t slab_bytes, std::string* error);

  std::vector<void*> slabs_;
  size_t bytes_ = 0;
};

/// True when the GPU addresses registered host memory by its host pointer (every recent GPU):
/// then a table pinned in slabs is one contiguous range for kernels.
bool gpu_uses_host_pointers();

}  // namespace pagedw2v
