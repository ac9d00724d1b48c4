#pragma once
/// @file device_buffer.hpp
/// Move-only owners of GPU memory (DeviceBuffer) and page-locked host memory (PinnedBuffer).
/// Allocation failures become pagedw2v::Error naming what was allocated, its size and, for the
/// GPU, how much memory was free, so that "out of GPU memory" reads as one clear line.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>

#include "base/error.hpp"
#include "gpu/cuda_device.hpp"
#include "kernels/cuda_check.hpp"

namespace pagedw2v {

namespace detail {
inline std::string mib(size_t bytes) {
  return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
}
}  // namespace detail

/// `count` elements of T in GPU memory (uninitialised).
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates; throws Error("out of GPU memory: …") naming `what` when the device is full.
  DeviceBuffer(size_t count, const std::string& what) : count_(count) {
    if (count == 0) return;
    const cudaError_t status = cudaMalloc(reinterpret_cast<void**>(&data_), bytes());
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      // Asked only to word the failure; the run's decisions take the memory of its one query
      // (gpu/cuda_device.hpp).
      uint64_t free_bytes = 0, total_bytes = 0;
      device_memory(free_bytes, total_bytes);
      data_ = nullptr;
      throw Error("out of GPU memory: " + what + " needs " + detail::mib(bytes()) + ", " +
                  detail::mib(free_bytes) + " free of " + detail::mib(total_bytes) +
                  " (lower --dim or --max-vocab, or use --device cpu)");
    }
    PAGEDW2V_CUDA_TRY(status);
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }
  bool empty() const { return count_ == 0; }

 private:
  void release() noexcept {
    if (data_ != nullptr) PAGEDW2V_CUDA_TRY_NO_THROW(cudaFree(data_));
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  size_t count_ = 0;
};

/// `count` elements of T in page-locked host memory, so copies to the GPU run asynchronously at
/// full PCIe speed. Throws Error naming `what` when the memory cannot be locked; callers that can
/// work without pinning catch it and fall back.
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t count, const std::string& what) : count_(count) {
    if (count == 0) return;
    const cudaError_t status =
        cudaHostAlloc(reinterpret_cast<void**>(&data_), count * sizeof(T), cudaHostAllocDefault);
    if (status != cudaSuccess) {
      cudaGetLastError();
      data_ = nullptr;
      count_ = 0;
      throw Error("cannot allocate " + detail::mib(count * sizeof(T)) +
                  " of pinned host memory for " + what + ": " + cudaGetErrorString(status));
    }
  }
  ~PinnedBuffer() { release(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  void release() noexcept {
    if (data_ != nullptr) PAGEDW2V_CUDA_TRY_NO_THROW(cudaFreeHost(data_));
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace pagedw2v
