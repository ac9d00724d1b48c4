#pragma once
/// @file replica_delta.hpp
/// The two element-wise passes of summing replicated tables over GPU ranks
/// (dist/gpu_replica_backend.hpp): what a rank's copy changed since the last sum, and the copy
/// and its snapshot set to the snapshot plus the sum of every rank's change. Their CPU
/// reference is the loop of dist/replica_backend.cpp's combine, which they equal bit for bit.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace pagedw2v {

/// delta[i] = copy[i] − snapshot[i] for i < n. Device pointers.
void launch_take_delta(const float* copy, const float* snapshot, float* delta, uint64_t n,
                       cudaStream_t stream);
/// snapshot[i] += sum[i]; copy[i] = snapshot[i] for i < n. Device pointers.
void launch_apply_sum(float* copy, float* snapshot, const float* sum, uint64_t n,
                      cudaStream_t stream);

}  // namespace pagedw2v
