#pragma once
/// @file cuda_device.hpp
/// The one place that asks the CUDA driver about the device: whether one can be used, its name
/// and its memory (query_device, once per process at the start of a run), and the memory in use
/// for the backend's report. Host-only header.

#include <cstdint>

#include "gpu/device_facts.hpp"

namespace pagedw2v {

/// The current device's facts; `usable` false (never an exception) without a driver or GPU.
/// Makes the device's context (the memory query needs it).
DeviceFacts query_device();

/// Bytes of device memory in use now (the context included), for reports; 0 when the driver
/// cannot say.
uint64_t device_used_bytes();

}  // namespace pagedw2v
