#pragma once
/// @file device_limits.hpp
/// What the kernels' launchers need to know of the GPU they launch on — multiprocessors, shared
/// memory, how many blocks of a kernel fit on one multiprocessor — queried once per device (and
/// per kernel shape) and kept, so that a launch asks the driver nothing. The one call a launch
/// still makes, cudaGetDevice, says which device's facts apply; the runtime answers it from
/// the calling thread's state. Host-only header; thread-safe.

#include <cstddef>

namespace pagedw2v::detail {

struct DeviceLimits {
  int device = 0;
  int sms = 0;               ///< multiprocessors
  int max_shared_optin = 0;  ///< dynamic shared memory a block may opt in to, in bytes
};

/// The limits of the calling thread's current device.
const DeviceLimits& device_limits();

/// Blocks of `threads` threads and `shared_bytes` of dynamic shared memory of `kernel` that fit
/// on one multiprocessor of `limits`' device, the current one
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor, asked once per device, kernel and shape).
int blocks_per_sm(const DeviceLimits& limits, const void* kernel, int threads, size_t shared_bytes);

/// Lets `kernel` launch with `shared_bytes` of dynamic shared memory on `limits`' device, the
/// current one (cudaFuncAttributeMaxDynamicSharedMemorySize); sets the attribute only when it
/// differs from what was last set for that kernel and device.
void allow_dynamic_shared(const DeviceLimits& limits, const void* kernel, size_t shared_bytes);

}  // namespace pagedw2v::detail
