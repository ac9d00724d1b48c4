#pragma once
/// @file cuda_device.hpp
/// The one place that asks the CUDA driver about the device: whether one can be used, its name
/// and its memory (query_device, once per process at the start of a run), and the memory free
/// and in use now, for messages and the backend's report. Host-only header.

#include <cstdint>

#include "gpu/device_facts.hpp"

namespace pagedw2v {

/// The current device's facts; `usable` false (never an exception) without a driver or GPU.
/// Makes the device's context (the memory query needs it).
DeviceFacts query_device();

/// The current device's free and total memory now, for a message (an allocation that failed);
/// false when the driver cannot say. The run's decisions take query_device's.
bool device_memory(uint64_t& free_bytes, uint64_t& total_bytes);

/// Bytes of device memory in use now (the context included), for reports; 0 when the driver
/// cannot say.
uint64_t device_used_bytes();

}  // namespace pagedw2v
