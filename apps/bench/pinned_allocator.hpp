#pragma once
/// @file pinned_allocator.hpp
/// A HostAllocator that hands out pinned (page-locked), mapped host memory for the paged tables,
/// so GPU kernels read and write table rows in place over PCIe (zero-copy) and the copy engines
/// move them at full speed.
///
/// How a table is pinned (the default, PinMethod::kRegisterSlabs): the table's bytes are reserved
/// as one anonymous mapping (contiguous, 2 MiB aligned, transparent huge pages requested), then
/// locked slab by slab (1 GiB by default) by a PinnedRegion (gpu/pinned_region.hpp), the
/// mechanism that pins training's tables too. A table stays one contiguous range whatever its
/// size, and when locking fails part-way the slabs already locked are released and the same
/// mapping is kept as pageable memory. The GPU addresses the table through its host pointer
/// (Hopper and every recent GPU report cudaDevAttrCanUseHostPointerForRegisteredMem); where a
/// device does not, the table is registered in one piece so its device pointer is contiguous.
/// Callers that copy with DMA split their copies at multiples of piece_bytes() from the table's
/// start (a copy may not span two registrations); kernels read across slabs freely.
/// PinMethod::kHostAlloc instead makes one cudaHostAlloc(Mapped | Portable) per table, its size
/// rounded up to whole slabs; PinMethod::kHostPool allocates from a CUDA memory pool located in
/// host memory (cudaMemPoolCreate, cudaMemLocationTypeHost) made accessible to the GPU. Both
/// are kept for comparison (`pagedw2v bench transfer --pin-method`).
///
/// When pinning fails the allocator follows PinFailure: kFallBack writes one line and returns
/// pageable memory (the run works, transfers are slower); kStop throws Error naming the flag to
/// change.
///
/// Host-only header: it names no CUDA type.

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>

#include "gpu/pinned_region.hpp"
#include "model/host_table.hpp"

namespace pagedw2v {

enum class PinMethod {
  kRegisterSlabs,  ///< mmap, then cudaHostRegister slab by slab (the default)
  kHostAlloc,      ///< one cudaHostAlloc per table, rounded up to whole slabs
  kHostPool,       ///< one allocation per table from a host-located CUDA memory pool
};

enum class PinFailure {
  kFallBack,  ///< say so in one line and hand out pageable memory
  kStop,      ///< throw Error naming the flag to change
};

struct PinnedAllocatorOptions {
  /// Bytes locked per cudaHostRegister call (kRegisterSlabs) or the rounding unit (kHostAlloc);
  /// 0 registers each table in one call.
  size_t slab_bytes = size_t{1} << 30;
  PinMethod method = PinMethod::kRegisterSlabs;
  PinFailure on_failure = PinFailure::kFallBack;
  /// The end of the message when pinning fails: what the user should change.
  std::string hint = "free host memory or raise the locked-memory limit (ulimit -l)";
  /// Where the one-line fallback notice goes; nullptr for silence.
  std::FILE* log = stderr;
};

namespace detail {

/// The few driver calls the allocator makes: PinnedRegion's locking calls, and the other
/// methods' allocations. The CUDA implementation is the real one; tests substitute one that
/// fails on demand, so the failure paths run without a GPU.
class PinBackend : public HostLocker {
 public:
  /// Pinned, mapped memory; nullptr and *error set on failure.
  virtual void* host_alloc(size_t bytes, std::string* error) = 0;
  virtual void host_free(void* p) noexcept = 0;
  /// Pinned memory from a host-located memory pool, addressed on the GPU by the same pointer;
  /// nullptr and *error set on failure.
  virtual void* pool_alloc(size_t bytes, std::string* error) = 0;
  virtual void pool_free(void* p) noexcept = 0;
  /// The GPU address of pinned host memory at `p` (nullptr when there is none).
  virtual void* device_pointer(void* p) noexcept = 0;
};

/// The CUDA runtime's calls on the current device.
std::unique_ptr<PinBackend> make_cuda_pin_backend();

}  // namespace detail

/// Pinned, mapped host memory for HostTable. Move-only; it must outlive the tables it allocated
/// and may be moved only while it has none.
class PinnedAllocator final : public HostAllocator {
 public:
  explicit PinnedAllocator(PinnedAllocatorOptions options = {});
  PinnedAllocator(PinnedAllocatorOptions options, std::unique_ptr<detail::PinBackend> backend);
  ~PinnedAllocator() override;
  PinnedAllocator(PinnedAllocator&& other) noexcept;
  PinnedAllocator& operator=(PinnedAllocator&& other) noexcept;
  PinnedAllocator(const PinnedAllocator&) = delete;
  PinnedAllocator& operator=(const PinnedAllocator&) = delete;

  /// Pinned memory, or pageable memory after a failure under kFallBack; nullptr when even
  /// pageable memory runs out. Throws Error under kStop when pinning fails.
  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) noexcept override;
  std::string name() const override;

  /// True when `p` (the start of an allocation) is pinned and mapped.
  bool is_pinned(const void* p) const;
  /// The GPU address of allocation `p`, or nullptr when it is pageable.
  void* device_pointer(void* p) const;
  /// The bytes of allocation `p` that one driver registration covers: a copy-engine copy must
  /// not cross a multiple of it counted from `p`. 0 when `p` is not a pinned allocation.
  size_t piece_bytes(const void* p) const;
  /// Bytes currently handed out, pinned and pageable.
  size_t pinned_bytes() const;
  size_t pageable_bytes() const;
  /// True once an allocation could not be pinned and fell back to pageable memory.
  bool fell_back() const;
  const PinnedAllocatorOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagedw2v
