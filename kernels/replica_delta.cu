#include "kernels/replica_delta.hpp"

#include <algorithm>

#include "kernels/cuda_check.hpp"

namespace pagedw2v {
namespace {

constexpr int kThreads = 256;

__global__ void take_delta_kernel(const float* copy, const float* snapshot, float* delta,
                                  uint64_t n) {
  for (uint64_t i = blockIdx.x * uint64_t{kThreads} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * kThreads) {
    delta[i] = copy[i] - snapshot[i];
  }
}

__global__ void apply_sum_kernel(float* copy, float* snapshot, const float* sum, uint64_t n) {
  for (uint64_t i = blockIdx.x * uint64_t{kThreads} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * kThreads) {
    const float v = snapshot[i] + sum[i];
    snapshot[i] = v;
    copy[i] = v;
  }
}

unsigned blocks_for(uint64_t n) {
  return static_cast<unsigned>(std::min<uint64_t>((n + kThreads - 1) / kThreads, 4096));
}

}  // namespace

void launch_take_delta(const float* copy, const float* snapshot, float* delta, uint64_t n,
                       cudaStream_t stream) {
  if (n == 0) return;
  take_delta_kernel<<<blocks_for(n), kThreads, 0, stream>>>(copy, snapshot, delta, n);
  PAGEDW2V_CUDA_TRY(cudaGetLastError());
}

void launch_apply_sum(float* copy, float* snapshot, const float* sum, uint64_t n,
                      cudaStream_t stream) {
  if (n == 0) return;
  apply_sum_kernel<<<blocks_for(n), kThreads, 0, stream>>>(copy, snapshot, sum, n);
  PAGEDW2V_CUDA_TRY(cudaGetLastError());
}

}  // namespace pagedw2v
