#include "sampler_probe.hpp"

#include "kernels/cuda_check.hpp"
#include "kernels/device_draws.cuh"

namespace pagedw2v {
namespace {

constexpr int kThreads = 256;

/// One thread per token (grid-stride): each decision depends only on its own position.
__global__ void subsample_probe_kernel(const uint32_t* tokens, uint64_t n, uint64_t pos0,
                                       const float* keep, uint64_t seed, uint32_t epoch,
                                       uint32_t window, uint32_t* out) {
  for (uint64_t p = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; p < n;
       p += uint64_t{gridDim.x} * blockDim.x) {
    const detail::KeepDecision d =
        detail::subsample_token(seed, pos0 + p, epoch, keep[tokens[p]], window);
    out[p] = (d.keep ? 0x80000000u : 0u) | d.shrink;
  }
}

/// One thread per Philox call (grid-stride), two negatives each.
__global__ void negative_probe_kernel(uint64_t draws, uint64_t seed, uint32_t epoch,
                                      uint32_t centre, const NoiseColumn* noise, uint32_t columns,
                                      uint32_t* out) {
  for (uint64_t d = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; d < draws;
       d += uint64_t{gridDim.x} * blockDim.x) {
    detail::negative_pair(seed, d / 8, epoch, static_cast<uint32_t>(d % 8), 0, centre, noise,
                          columns, &out[2 * d], &out[2 * d + 1]);
  }
}

unsigned grid_for(uint64_t n) {
  const uint64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

}  // namespace

void launch_subsample_probe(const uint32_t* tokens, uint64_t n, uint64_t pos0, const float* keep,
                            uint64_t seed, uint32_t epoch, uint32_t window, uint32_t* out,
                            cudaStream_t stream) {
  subsample_probe_kernel<<<grid_for(n), kThreads, 0, stream>>>(tokens, n, pos0, keep, seed, epoch,
                                                               window, out);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_negative_probe(uint64_t draws, uint64_t seed, uint32_t epoch, uint32_t centre,
                           const NoiseColumn* noise, uint32_t columns, uint32_t* out,
                           cudaStream_t stream) {
  negative_probe_kernel<<<grid_for(draws), kThreads, 0, stream>>>(draws, seed, epoch, centre, noise,
                                                                  columns, out);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

}  // namespace pagedw2v
