#pragma once
// A GPU's facts and kernel scratch sizes made up, for the run's plan made without a GPU
// (train/run_plan.hpp): the plan takes both as values, so a test needs no device to pin it.

#include <algorithm>
#include <cstdint>

#include "gpu/device_facts.hpp"

namespace pagedw2v::testing_util {

/// A usable GPU with `free_bytes` free of 80 GiB.
inline DeviceFacts made_up_gpu(uint64_t free_bytes = uint64_t{80} << 30) {
  DeviceFacts d;
  d.usable = true;
  d.name = "test GPU";
  d.free_bytes = free_bytes;
  d.total_bytes = uint64_t{80} << 30;
  return d;
}

/// Scratch sizes of the kernels' selects and sorts that grow with the items, as CUB's do
/// (gpu_plan.hpp's GpuScratchBytes; CUB's own need a GPU to ask).
inline uint64_t made_up_scratch(uint64_t select_n, uint32_t order_n, uint32_t key_bits) {
  return std::max<uint64_t>(select_n / 2 + 4096, uint64_t{order_n} * 8 + key_bits * 1024);
}

}  // namespace pagedw2v::testing_util
