#include "bench/pinned_allocator.hpp"

#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "base/byte_size.hpp"
#include "base/error.hpp"

namespace pagedw2v {
namespace {

// Transparent huge pages are 2 MiB on x86-64 and most arm64 kernels: aligning the mapping to
// them lets the kernel back it with huge pages, so locking touches 512× fewer page entries.
constexpr size_t kHugePage = size_t{2} << 20;

size_t round_up(size_t n, size_t unit) { return unit == 0 ? n : (n + unit - 1) / unit * unit; }

std::string cuda_error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

/// PinnedRegion's CUDA calls (cuda_host_locker), and the allocations of the other methods.
class CudaPinBackend final : public detail::PinBackend {
 public:
  bool register_range(void* p, size_t bytes, std::string* error) override {
    return detail::cuda_host_locker().register_range(p, bytes, error);
  }
  void unregister_range(void* p) noexcept override {
    detail::cuda_host_locker().unregister_range(p);
  }
  bool host_pointer_is_device_pointer() noexcept override {
    return detail::cuda_host_locker().host_pointer_is_device_pointer();
  }
  void* host_alloc(size_t bytes, std::string* error) override {
    void* p = nullptr;
    const cudaError_t status =
        cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (status == cudaSuccess) return p;
    cudaGetLastError();
    *error = cuda_error_text(status);
    return nullptr;
  }
  void host_free(void* p) noexcept override {
    if (cudaFreeHost(p) != cudaSuccess) cudaGetLastError();
  }
  void* pool_alloc(size_t bytes, std::string* error) override {
    cudaError_t status = cudaSuccess;
    if (pool_ == nullptr) {
      int device = 0;
      cudaMemPoolProps props{};
      props.allocType = cudaMemAllocationTypePinned;
      props.handleTypes = cudaMemHandleTypeNone;
      props.location.type = cudaMemLocationTypeHost;
      props.location.id = 0;
      status = cudaGetDevice(&device);
      if (status == cudaSuccess) status = cudaMemPoolCreate(&pool_, &props);
      if (status == cudaSuccess) {
        cudaMemAccessDesc access{};
        access.location.type = cudaMemLocationTypeDevice;
        access.location.id = device;
        access.flags = cudaMemAccessFlagsProtReadWrite;
        status = cudaMemPoolSetAccess(pool_, &access, 1);
      }
    }
    void* p = nullptr;
    if (status == cudaSuccess) status = cudaMallocFromPoolAsync(&p, bytes, pool_, cudaStreamLegacy);
    if (status == cudaSuccess) status = cudaStreamSynchronize(cudaStreamLegacy);
    if (status == cudaSuccess) return p;
    cudaGetLastError();
    *error = cuda_error_text(status);
    return nullptr;
  }
  void pool_free(void* p) noexcept override {
    if (cudaFreeAsync(p, cudaStreamLegacy) != cudaSuccess ||
        cudaStreamSynchronize(cudaStreamLegacy) != cudaSuccess) {
      cudaGetLastError();
    }
  }
  ~CudaPinBackend() override {
    if (pool_ != nullptr && cudaMemPoolDestroy(pool_) != cudaSuccess) cudaGetLastError();
  }
  void* device_pointer(void* p) noexcept override {
    void* d = nullptr;
    if (cudaHostGetDevicePointer(&d, p, 0) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return d;
  }

 private:
  cudaMemPool_t pool_ = nullptr;
};

/// A 2 MiB aligned anonymous mapping of at least `bytes`; {nullptr, 0} when it cannot be made.
std::pair<void*, size_t> map_anonymous(size_t bytes) {
  const size_t len = round_up(std::max<size_t>(bytes, 1), kHugePage);
  void* raw =
      mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return {nullptr, 0};
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(start, kHugePage);
  if (aligned > start) munmap(raw, aligned - start);
  const size_t tail = start + len + kHugePage - (aligned + len);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + len), tail);
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, len, MADV_HUGEPAGE);  // a hint: without THP the mapping still works
  return {p, len};
}

}  // namespace

std::unique_ptr<detail::PinBackend> detail::make_cuda_pin_backend() {
  return std::make_unique<CudaPinBackend>();
}

struct PinnedAllocator::Impl {
  enum class Kind { kRegistered, kHostAlloc, kHostPool, kPageable };
  struct Allocation {
    Kind kind;
    size_t bytes;         ///< what the caller asked for
    size_t mapped_bytes;  ///< the mapping or cudaHostAlloc size
    PinnedRegion region;  ///< the locked mapping (kRegistered)
  };

  PinnedAllocatorOptions options;
  std::unique_ptr<detail::PinBackend> backend;
  mutable std::mutex mutex;
  std::map<const void*, Allocation> live;
  size_t pinned = 0;
  size_t pageable = 0;
  bool fell_back = false;

  /// Pinning `bytes` failed with `error`: throws under kStop, else notes it (one line per
  /// allocator) and returns.
  void pin_failed(size_t bytes, const std::string& error) {
    const std::string what =
        "cannot pin " + format_gib(bytes) + " of host memory for a table (" + error + ")";
    if (options.on_failure == PinFailure::kStop) throw Error(what + "; " + options.hint);
    if (!fell_back && options.log != nullptr) {
      std::fprintf(options.log, "pagedw2v: %s; using pageable memory, transfers will be slower\n",
                   what.c_str());
      std::fflush(options.log);
    }
    fell_back = true;
  }

  void* add(void* p, Allocation a) {
    (a.kind == Kind::kPageable ? pageable : pinned) += a.bytes;
    live.emplace(p, std::move(a));
    return p;
  }

  void* allocate_host_alloc(size_t bytes) {
    const size_t rounded = round_up(std::max<size_t>(bytes, 1), options.slab_bytes);
    std::string error;
    if (void* p = backend->host_alloc(rounded, &error)) {
      return add(p, {Kind::kHostAlloc, bytes, rounded, {}});
    }
    pin_failed(bytes, error);
    const auto [p, len] = map_anonymous(bytes);
    if (p == nullptr) return nullptr;
    return add(p, {Kind::kPageable, bytes, len, {}});
  }

  void* allocate_pool(size_t bytes) {
    std::string error;
    if (void* p = backend->pool_alloc(std::max<size_t>(bytes, 1), &error)) {
      return add(p, {Kind::kHostPool, bytes, bytes, {}});
    }
    pin_failed(bytes, error);
    const auto [p, len] = map_anonymous(bytes);
    if (p == nullptr) return nullptr;
    return add(p, {Kind::kPageable, bytes, len, {}});
  }

  void* allocate_registered(size_t bytes) {
    const auto [base, len] = map_anonymous(bytes);
    if (base == nullptr) return nullptr;
    const size_t slab = backend->host_pointer_is_device_pointer() ? options.slab_bytes : 0;
    std::string error;
    PinnedRegion region = PinnedRegion::try_pin(base, len, slab, *backend, &error);
    if (!region.pinned()) {
      try {
        pin_failed(bytes, error);
      } catch (...) {
        munmap(base, len);
        throw;
      }
      return add(base, {Kind::kPageable, bytes, len, {}});
    }
    return add(base, {Kind::kRegistered, bytes, len, std::move(region)});
  }

  void release(const void* p, Allocation& a) noexcept {
    void* q = const_cast<void*>(p);
    switch (a.kind) {
      case Kind::kRegistered:
        a.region = PinnedRegion();  // unlocked before it is unmapped
        munmap(q, a.mapped_bytes);
        pinned -= a.bytes;
        break;
      case Kind::kHostAlloc:
        backend->host_free(q);
        pinned -= a.bytes;
        break;
      case Kind::kHostPool:
        backend->pool_free(q);
        pinned -= a.bytes;
        break;
      case Kind::kPageable:
        munmap(q, a.mapped_bytes);
        pageable -= a.bytes;
        break;
    }
  }

  ~Impl() {
    for (auto& [p, a] : live) release(p, a);
  }
};

PinnedAllocator::PinnedAllocator(PinnedAllocatorOptions options)
    : PinnedAllocator(std::move(options), detail::make_cuda_pin_backend()) {}

PinnedAllocator::PinnedAllocator(PinnedAllocatorOptions options,
                                 std::unique_ptr<detail::PinBackend> backend)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->backend = std::move(backend);
}

PinnedAllocator::~PinnedAllocator() = default;
PinnedAllocator::PinnedAllocator(PinnedAllocator&& other) noexcept = default;
PinnedAllocator& PinnedAllocator::operator=(PinnedAllocator&& other) noexcept = default;

void* PinnedAllocator::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  switch (impl_->options.method) {
    case PinMethod::kHostAlloc:
      return impl_->allocate_host_alloc(bytes);
    case PinMethod::kHostPool:
      return impl_->allocate_pool(bytes);
    case PinMethod::kRegisterSlabs:
      break;
  }
  return impl_->allocate_registered(bytes);
}

void PinnedAllocator::deallocate(void* p, size_t) noexcept {
  if (p == nullptr || !impl_) return;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const auto it = impl_->live.find(p);
  if (it == impl_->live.end()) return;
  impl_->release(it->first, it->second);
  impl_->live.erase(it);
}

std::string PinnedAllocator::name() const {
  const PinnedAllocatorOptions& o = impl_->options;
  const std::string slab =
      o.slab_bytes == 0 ? "one piece per table" : format_gib(o.slab_bytes) + " slabs";
  switch (o.method) {
    case PinMethod::kHostAlloc:
      return "pinned (cudaHostAlloc, rounded to " + slab + ")";
    case PinMethod::kHostPool:
      return "pinned (host-located CUDA memory pool)";
    case PinMethod::kRegisterSlabs:
      break;
  }
  return "pinned (cudaHostRegister, " + slab + ")";
}

bool PinnedAllocator::is_pinned(const void* p) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const auto it = impl_->live.find(p);
  return it != impl_->live.end() && it->second.kind != Impl::Kind::kPageable;
}

void* PinnedAllocator::device_pointer(void* p) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const auto it = impl_->live.find(p);
  if (it == impl_->live.end()) return nullptr;
  switch (it->second.kind) {
    case Impl::Kind::kPageable:
      return nullptr;
    case Impl::Kind::kHostPool:
      return p;  // pool memory has one address for the CPU and the GPU
    default:
      return impl_->backend->device_pointer(p);
  }
}

size_t PinnedAllocator::piece_bytes(const void* p) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const auto it = impl_->live.find(p);
  if (it == impl_->live.end() || it->second.kind == Impl::Kind::kPageable) return 0;
  const Impl::Allocation& a = it->second;
  return a.kind == Impl::Kind::kRegistered ? a.region.piece_bytes() : a.mapped_bytes;
}

size_t PinnedAllocator::pinned_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->pinned;
}

size_t PinnedAllocator::pageable_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->pageable;
}

bool PinnedAllocator::fell_back() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->fell_back;
}

const PinnedAllocatorOptions& PinnedAllocator::options() const { return impl_->options; }

}  // namespace pagedw2v
