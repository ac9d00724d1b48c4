#pragma once
/// @file cuda_device.hpp
/// Whether a CUDA device can be used, and its context started ahead of the first call that needs
/// it: for the backend and the parts that train on a device alike. Host-only header.

namespace pagedw2v {

/// True when a CUDA device can be used; false (never an exception) without a driver or GPU.
bool cuda_device_available();

/// Creates the current device's context (what the first CUDA call of a run otherwise pays for,
/// a few tenths of a second); errors are dropped: the calls that need the device report them.
void start_cuda_context();

}  // namespace pagedw2v
