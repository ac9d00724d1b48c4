#include "kernels/pool_draw.hpp"

#include "kernels/cuda_check.hpp"
#include "kernels/device_draws.cuh"

namespace pagedw2v {
namespace {

constexpr int kThreads = 256;

/// One thread per pool entry (grid-stride): each entry is its own Philox draw.
__global__ void draw_pool_kernel(uint64_t seed, uint32_t epoch, uint64_t super_batch,
                                 const NoiseColumn* noise, uint32_t columns, uint32_t n,
                                 uint32_t* out) {
  for (uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; k < n;
       k += uint64_t{gridDim.x} * blockDim.x) {
    out[k] = detail::device_pool_entry(seed, epoch, super_batch, static_cast<uint32_t>(k), noise,
                                       columns);
  }
}

/// The pools of `count` consecutive periods: thread per entry, entry k of the run belongs to
/// period first + k / n.
__global__ void draw_pools_kernel(uint64_t seed, uint32_t epoch, uint64_t first, uint64_t count,
                                  const NoiseColumn* noise, uint32_t columns, uint32_t n,
                                  uint32_t* out) {
  const uint64_t total = count * n;
  for (uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; k < total;
       k += uint64_t{gridDim.x} * blockDim.x) {
    out[k] = detail::device_pool_entry(seed, epoch, first + k / n, static_cast<uint32_t>(k % n),
                                       noise, columns);
  }
}

}  // namespace

void launch_draw_pool(uint64_t seed, uint32_t epoch, uint64_t super_batch, const NoiseColumn* noise,
                      uint32_t columns, uint32_t n, uint32_t* out, cudaStream_t stream) {
  if (n == 0) return;
  const uint32_t needed = (n + kThreads - 1) / kThreads;
  const uint32_t blocks = needed < 4096 ? needed : 4096;
  draw_pool_kernel<<<blocks, kThreads, 0, stream>>>(seed, epoch, super_batch, noise, columns, n,
                                                    out);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_draw_pools(uint64_t seed, uint32_t epoch, uint64_t first_super_batch, uint64_t count,
                       const NoiseColumn* noise, uint32_t columns, uint32_t n, uint32_t* out,
                       cudaStream_t stream) {
  const uint64_t total = count * n;
  if (total == 0) return;
  const uint64_t needed = (total + kThreads - 1) / kThreads;
  const uint32_t blocks = static_cast<uint32_t>(needed < 4096 ? needed : 4096);
  draw_pools_kernel<<<blocks, kThreads, 0, stream>>>(seed, epoch, first_super_batch, count, noise,
                                                     columns, n, out);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

}  // namespace pagedw2v
