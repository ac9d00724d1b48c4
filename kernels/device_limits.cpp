#include "kernels/device_limits.hpp"

#include <map>
#include <mutex>
#include <tuple>

#include "kernels/cuda_check.hpp"

namespace pagedw2v::detail {
namespace {

/// Every cache of this file, behind one lock: launches are rare next to what they launch, and
/// a miss queries the driver once.
struct Caches {
  std::mutex mutex;
  std::map<int, DeviceLimits> limits;
  std::map<std::tuple<int, const void*, int, size_t>, int> occupancy;
  std::map<std::pair<int, const void*>, size_t> shared;
};

Caches& caches() {
  static Caches c;
  return c;
}

int current_device() {
  int device = 0;
  PAGEDW2V_CUDA_TRY(cudaGetDevice(&device));
  return device;
}

}  // namespace

const DeviceLimits& device_limits() {
  const int device = current_device();
  Caches& c = caches();
  std::lock_guard<std::mutex> lock(c.mutex);
  const auto it = c.limits.find(device);
  if (it != c.limits.end()) return it->second;  // map nodes stay where they are
  DeviceLimits l;
  l.device = device;
  PAGEDW2V_CUDA_TRY(cudaDeviceGetAttribute(&l.sms, cudaDevAttrMultiProcessorCount, device));
  PAGEDW2V_CUDA_TRY(
      cudaDeviceGetAttribute(&l.max_shared_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return c.limits.emplace(device, l).first->second;
}

int blocks_per_sm(const DeviceLimits& limits, const void* kernel, int threads,
                  size_t shared_bytes) {
  const int device = limits.device;
  Caches& c = caches();
  std::lock_guard<std::mutex> lock(c.mutex);
  const auto key = std::make_tuple(device, kernel, threads, shared_bytes);
  const auto it = c.occupancy.find(key);
  if (it != c.occupancy.end()) return it->second;
  int blocks = 0;
  PAGEDW2V_CUDA_TRY(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, shared_bytes));
  c.occupancy.emplace(key, blocks);
  return blocks;
}

void allow_dynamic_shared(const DeviceLimits& limits, const void* kernel, size_t shared_bytes) {
  const int device = limits.device;
  Caches& c = caches();
  std::lock_guard<std::mutex> lock(c.mutex);
  const auto key = std::make_pair(device, kernel);
  const auto it = c.shared.find(key);
  if (it != c.shared.end() && it->second == shared_bytes) return;
  PAGEDW2V_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(shared_bytes)));
  c.shared[key] = shared_bytes;
}

}  // namespace pagedw2v::detail
