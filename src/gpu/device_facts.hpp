#pragma once
/// @file device_facts.hpp
/// What a run knows of its GPU: taken once per process at the start of a run (query_device in
/// cuda_device.hpp asks the driver) and handed, as a value, to the plan and the backends, which
/// never ask again. Plain C++: tests make any device they need without one.

#include <array>
#include <cstdint>
#include <string>

namespace pagedw2v {

/// The device a run may train on. `usable` false: no driver, no GPU, or a build without CUDA.
struct DeviceFacts {
  bool usable = false;
  std::string name;  ///< for messages and the backend line
  /// Device memory when the run started (the driver's context made, nothing of the run's on it).
  uint64_t free_bytes = 0, total_bytes = 0;
  /// Whether the GPU addresses registered host memory by its host pointer (paged tables need it).
  bool host_pointers = true;
  /// The device's UUID: ranks compare theirs to find two on one GPU (which NCCL refuses).
  std::array<unsigned char, 16> uuid{};
};

/// The GPU a process trains on as the run plan grants it: the device, and the memory the run
/// may use there (gpu_budget of --gpu-memory and the free memory, gpu_plan.hpp).
struct GpuGrant {
  DeviceFacts device;
  uint64_t budget = 0;
};

}  // namespace pagedw2v
