#pragma once
/// @file pinned_region.hpp
/// The one way host memory is pinned for the GPU: memory that is already allocated (a host
/// table, the encoded corpus, or the benchmark allocator's fresh mappings,
/// apps/bench/pinned_allocator.hpp) is page-locked and mapped for as long as the object lives,
/// so GPU kernels read and write it in place and the copy engines move it at full speed. The
/// range is locked in slabs (1 GiB by default), so that no single driver call locks tens of GB.
/// A copy-engine copy must stay inside one slab — the driver rejects a range that spans two
/// registrations — while kernels read across slabs freely where the GPU addresses registered
/// memory by its host pointer (gpu_uses_host_pointers). Host-only header.

#include <cstddef>
#include <string>
#include <vector>

namespace pagedw2v {

namespace detail {

/// The driver calls that lock host memory. The CUDA runtime's (cuda_host_locker) are the real
/// ones; tests substitute calls that fail on demand, so that the failure paths run without a
/// GPU.
class HostLocker {
 public:
  virtual ~HostLocker() = default;
  /// Locks [p, p + bytes) and maps it for the GPU. On failure returns false and sets *error.
  virtual bool register_range(void* p, size_t bytes, std::string* error) = 0;
  virtual void unregister_range(void* p) noexcept = 0;
  /// True when registered memory is addressed on the GPU by its host pointer, so slabs
  /// registered one by one form one contiguous device range.
  virtual bool host_pointer_is_device_pointer() noexcept = 0;
};

/// cudaHostRegister(Mapped | Portable) and its undoing, on the current device.
HostLocker& cuda_host_locker();

}  // namespace detail

class PinnedRegion {
 public:
  PinnedRegion() = default;
  /// Locks [p, p + bytes) (widened to whole pages). Throws Error naming `what` with `hint`
  /// appended when the driver refuses, after unlocking what it had locked.
  PinnedRegion(void* p, size_t bytes, const std::string& what, const std::string& hint,
               size_t slab_bytes = size_t{1} << 30);
  /// The same, but returns an empty region instead of throwing (the caller falls back).
  static PinnedRegion try_pin(void* p, size_t bytes, size_t slab_bytes = size_t{1} << 30);
  /// The same through `locker` (which must outlive the region); when the driver refuses, sets
  /// *error to why, and how much had been locked. Slab 0 locks the range in one call.
  static PinnedRegion try_pin(void* p, size_t bytes, size_t slab_bytes, detail::HostLocker& locker,
                              std::string* error);
  ~PinnedRegion();
  PinnedRegion(PinnedRegion&& other) noexcept;
  PinnedRegion& operator=(PinnedRegion&& other) noexcept;
  PinnedRegion(const PinnedRegion&) = delete;
  PinnedRegion& operator=(const PinnedRegion&) = delete;

  bool pinned() const { return !slabs_.empty(); }
  size_t bytes() const { return bytes_; }
  /// The bytes one registration covers, counted from the region's first page: a copy-engine
  /// copy must not cross a multiple of it. 0 when nothing is pinned.
  size_t piece_bytes() const { return piece_bytes_; }

 private:
  void release() noexcept;
  bool pin(void* p, size_t bytes, size_t slab_bytes, std::string* error);

  detail::HostLocker* locker_ = nullptr;
  std::vector<void*> slabs_;
  size_t bytes_ = 0;
  size_t piece_bytes_ = 0;
};

/// True when the GPU addresses registered host memory by its host pointer (every recent GPU):
/// then a table pinned in slabs is one contiguous range for kernels.
bool gpu_uses_host_pointers();

}  // namespace pagedw2v
