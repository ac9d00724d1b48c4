#pragma once
/// @file philox_probe.hpp
/// cuRAND's Philox4x32-10 (curand_kernel.h) on the GPU for given counters and keys, so a test can
/// compare its bits with src/philox.hpp. Test-only.

#include <cstddef>
#include <cstdint>

namespace pagedw2v {

/// out[4i .. 4i+3] = curand_Philox4x32_10(ctr[4i .. 4i+3], key[2i .. 2i+1]) for i < n; device
/// pointers; synchronous. Throws Error on a CUDA failure.
void curand_philox_probe(const uint32_t* ctr, const uint32_t* key, size_t n, uint32_t* out);

}  // namespace pagedw2v
