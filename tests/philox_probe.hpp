#pragma once
/// @file philox_probe.hpp
/// The kernels' random bits (kernels/device_draws.cuh: cuRAND's Philox4x32-10 on philox.hpp's
/// counters and keys) on the GPU for given counters, keys and draws, so a test can compare them
/// with src/base/philox.hpp bit for bit. Test-only.

#include <cstddef>
#include <cstdint>

namespace pagedw2v {

/// out[4i .. 4i+3] = the kernels' Philox block (curand_Philox4x32_10) of counter
/// ctr[4i .. 4i+3] under key (key[2i], key[2i+1]) for i < n; device pointers; synchronous.
/// Throws Error on a CUDA failure.
void curand_philox_probe(const uint32_t* ctr, const uint32_t* key, size_t n, uint32_t* out);

/// One draw as philox.hpp's draw() takes it; `kind` is a DrawKind value.
struct DrawProbe {
  uint64_t seed;
  uint64_t pos;
  uint32_t epoch;
  uint32_t kind;
  uint32_t sub;
};

/// out[4i .. 4i+3] = the kernels' device_draw of draws[i] for i < n; device pointers;
/// synchronous. Throws Error on a CUDA failure.
void device_draw_probe(const DrawProbe* draws, size_t n, uint32_t* out);

}  // namespace pagedw2v
