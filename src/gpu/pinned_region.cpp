#include "gpu/pinned_region.hpp"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "error.hpp"

namespace pagedw2v {

namespace {

std::string gib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1u << 30));
  return buf;
}

}  // namespace

PinnedRegion::PinnedRegion(void* p, size_t bytes, const std::string& what, const std::string& hint,
                           size_t slab_bytes) {
  std::string error;
  if (!pin(p, bytes, slab_bytes, &error)) {
    throw Error("cannot pin the " + what + " (" + gib(bytes) + ") in host memory: " + error + "; " +
                hint);
  }
}

PinnedRegion PinnedRegion::try_pin(void* p, size_t bytes, size_t slab_bytes) {
  PinnedRegion r;
  std::string error;
  r.pin(p, bytes, slab_bytes, &error);
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
    const cudaError_t status =
        cudaHostRegister(slab, len, cudaHostRegisterMapped | cudaHostRegisterPortable);
    if (status != cudaSuccess) {
      cudaGetLastError();
      *error = std::string(cudaGetErrorString(status)) +
               (at > begin ? " after " + gib(at - begin) + " were locked" : "");
      release();
      return false;
    }
    slabs_.push_back(slab);
  }
  bytes_ = bytes;
  return true;
}

PinnedRegion::~PinnedRegion() { release(); }

PinnedRegion::PinnedRegion(PinnedRegion&& other) noexcept
    : slabs_(std::move(other.slabs_)), bytes_(std::exchange(other.bytes_, 0)) {
  other.slabs_.clear();
}

PinnedRegion& PinnedRegion::operator=(PinnedRegion&& other) noexcept {
  if (this != &other) {
    release();
    slabs_ = std::move(other.slabs_);
    other.slabs_.clear();
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void PinnedRegion::release() noexcept {
  for (void* s : slabs_) {
    if (cudaHostUnregister(s) != cudaSuccess) cudaGetLastError();
  }
  slabs_.clear();
  bytes_ = 0;
}

bool gpu_uses_host_pointers() {
  int device = 0, value = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&value, cudaDevAttrCanUseHostPointerForRegisteredMem, device) !=
          cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return value != 0;
}

}  // namespace pagedw2v
