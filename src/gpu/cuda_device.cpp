#include "gpu/cuda_device.hpp"

#include <cuda_runtime_api.h>

#include <cstring>

#include "gpu/pinned_region.hpp"

namespace pagedw2v {

namespace {

/// The device's free and total memory: the product's one memory query (device_buffer.hpp asks
/// again only to word an allocation failure).
bool memory_info(uint64_t& free_bytes, uint64_t& total_bytes) {
  size_t free_now = 0, total = 0;
  if (cudaMemGetInfo(&free_now, &total) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  free_bytes = free_now;
  total_bytes = total;
  return true;
}

}  // namespace

DeviceFacts query_device() {
  DeviceFacts facts;
  try {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      return facts;
    }
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
        !memory_info(facts.free_bytes, facts.total_bytes)) {
      cudaGetLastError();
      return DeviceFacts{};
    }
    facts.usable = true;
    facts.name = prop.name;
    std::memcpy(facts.uuid.data(), prop.uuid.bytes, facts.uuid.size());
    facts.host_pointers = gpu_uses_host_pointers();
  } catch (...) {
    return DeviceFacts{};
  }
  return facts;
}

bool device_memory(uint64_t& free_bytes, uint64_t& total_bytes) {
  return memory_info(free_bytes, total_bytes);
}

uint64_t device_used_bytes() {
  uint64_t free_bytes = 0, total_bytes = 0;
  if (!memory_info(free_bytes, total_bytes)) return 0;
  return total_bytes - free_bytes;
}

}  // namespace pagedw2v
