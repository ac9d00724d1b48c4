#pragma once
/// @file pool_draw.hpp
/// Host launcher that draws a super-batch's negative pool on the GPU: the same entries as the
/// CPU's draw_pool (negative_pool.hpp), for the training kernel's SgnsArgs::pool.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "model/sampler.hpp"

namespace pagedw2v {

/// Writes entries 0 … n − 1 of the pool of super-batch `super_batch` in `epoch` to out[0..n)
/// (device memory), drawn from the noise table `noise` of `columns` columns (device memory), on
/// `stream` (asynchronous). Throws Error on a launch failure.
void launch_draw_pool(uint64_t seed, uint32_t epoch, uint64_t super_batch, const NoiseColumn* noise,
                      uint32_t columns, uint32_t n, uint32_t* out, cudaStream_t stream);

/// The pools of periods first_super_batch … first_super_batch + count − 1, one after the other
/// (count · n entries), in one launch.
void launch_draw_pools(uint64_t seed, uint32_t epoch, uint64_t first_super_batch, uint64_t count,
                       const NoiseColumn* noise, uint32_t columns, uint32_t n, uint32_t* out,
                       cudaStream_t stream);

}  // namespace pagedw2v
