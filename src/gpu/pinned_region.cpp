#include "gpu/pinned_region.hpp"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "base/byte_size.hpp"
#include "base/error.hpp"

namespace pagedw2v {

namespace {

class CudaHostLocker final : public detail::HostLocker {
 public:
  bool register_range(void* p, size_t bytes, std::string* error) override {
    const cudaError_t status =
        cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
    if (status == cudaSuccess) return true;
    cudaGetLastError();
    *error = cudaGetErrorString(status);
    return false;
  }
  void unregister_range(void* p) noexcept override {
    if (cudaHostUnregister(p) != cudaSuccess) cudaGetLastError();
  }
  bool host_pointer_is_device_pointer() noexcept override {
    int device = 0, value = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&value, cudaDevAttrCanUseHostPointerForRegisteredMem, device) !=
            cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return value != 0;
  }
};

}  // namespace

detail::HostLocker& detail::cuda_host_locker() {
  static CudaHostLocker locker;
  return locker;
}

PinnedRegion::PinnedRegion(void* p, size_t bytes, const std::string& what, const std::string& hint,
                           size_t slab_bytes)
    : locker_(&detail::cuda_host_locker()) {
  std::string error;
  if (!pin(p, bytes, slab_bytes, &error)) {
    throw Error("cannot pin the " + what + " (" + format_gib(bytes) + ") in host memory: " + error +
                "; " + hint);
  }
}

PinnedRegion PinnedRegion::try_pin(void* p, size_t bytes, size_t slab_bytes) {
  std::string error;
  return try_pin(p, bytes, slab_bytes, detail::cuda_host_locker(), &error);
}

PinnedRegion PinnedRegion::try_pin(void* p, size_t bytes, size_t slab_bytes,
                                   detail::HostLocker& locker, std::string* error) {
  PinnedRegion r;
  r.locker_ = &locker;
  r.pin(p, bytes, slab_bytes, error);
  return r;
}

bool PinnedRegion::pin(void* p, size_t bytes, size_t slab_bytes, std::string* error) {
  if (p == nullptr || bytes == 0) return true;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes + page - 1) & ~(page - 1);
  const size_t step = slab_bytes == 0 ? end - begin : std::max<size_t>(slab_bytes, page);
  for (uintptr_t at = begin; at < end; at += step) {
    const size_t len = std::min<size_t>(step, end - at);
    void* slab = reinterpret_cast<void*>(at);
    if (!locker_->register_range(slab, len, error)) {
      if (at > begin) *error += " after " + format_gib(at - begin) + " were locked";
      release();
      return false;
    }
    slabs_.push_back(slab);
  }
  bytes_ = bytes;
  piece_bytes_ = std::min<size_t>(step, end - begin);
  return true;
}

PinnedRegion::~PinnedRegion() { release(); }

PinnedRegion::PinnedRegion(PinnedRegion&& other) noexcept
    : locker_(other.locker_),
      slabs_(std::move(other.slabs_)),
      bytes_(std::exchange(other.bytes_, 0)),
      piece_bytes_(std::exchange(other.piece_bytes_, 0)) {
  other.slabs_.clear();
}

PinnedRegion& PinnedRegion::operator=(PinnedRegion&& other) noexcept {
  if (this != &other) {
    release();
    locker_ = other.locker_;
    slabs_ = std::move(other.slabs_);
    other.slabs_.clear();
    bytes_ = std::exchange(other.bytes_, 0);
    piece_bytes_ = std::exchange(other.piece_bytes_, 0);
  }
  return *this;
}

void PinnedRegion::release() noexcept {
  for (void* s : slabs_) locker_->unregister_range(s);
  slabs_.clear();
  bytes_ = 0;
  piece_bytes_ = 0;
}

bool gpu_uses_host_pointers() {
  return detail::cuda_host_locker().host_pointer_is_device_pointer();
}

}  // namespace pagedw2v
