#pragma once
/// @file sampler_probe.hpp
/// Host launchers that run the training kernel's random decisions (device_draws.cuh) on their
/// own and write every result out, so tests can check them against the CPU draws and against
/// the distributions they should follow.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "model/sampler.hpp"

namespace pagedw2v {

/// For token p of tokens[0..n) (corpus position pos0 + p): out[p] = keep << 31 | shrink.
void launch_subsample_probe(const uint32_t* tokens, uint64_t n, uint64_t pos0, const float* keep,
                            uint64_t seed, uint32_t epoch, uint32_t window, uint32_t* out,
                            cudaStream_t stream);

/// Draw d of [0, draws): the negative pair of (pos = d / 8, slot = d % 8, call 0) for centre
/// `centre`; out[2d], out[2d + 1] are the two ids (0xFFFFFFFF where the centre was drawn).
void launch_negative_probe(uint64_t draws, uint64_t seed, uint32_t epoch, uint32_t centre,
                           const NoiseColumn* noise, uint32_t columns, uint32_t* out,
                           cudaStream_t stream);

}  // namespace pagedw2v
