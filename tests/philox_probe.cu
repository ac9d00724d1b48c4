#include "philox_probe.hpp"

#include "kernels/cuda_check.hpp"
#include "kernels/device_draws.cuh"

namespace pagedw2v {
namespace {

constexpr int kThreads = 256;

// One thread per (counter, key) pair: each is its own Philox block.
__global__ void philox_probe_kernel(const uint32_t* ctr, const uint32_t* key, size_t n,
                                    uint32_t* out) {
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const Philox4 c{{ctr[4 * i], ctr[4 * i + 1], ctr[4 * i + 2], ctr[4 * i + 3]}};
  const Philox4 r = detail::philox_block(c, PhiloxKey{key[2 * i], key[2 * i + 1]});
  for (int k = 0; k < 4; ++k) out[4 * i + k] = r.v[k];
}

// One thread per draw.
__global__ void draw_probe_kernel(const DrawProbe* draws, size_t n, uint32_t* out) {
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const DrawProbe d = draws[i];
  const Philox4 r =
      detail::device_draw(d.seed, d.pos, d.epoch, static_cast<DrawKind>(d.kind), d.sub);
  for (int k = 0; k < 4; ++k) out[4 * i + k] = r.v[k];
}

unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

void curand_philox_probe(const uint32_t* ctr, const uint32_t* key, size_t n, uint32_t* out) {
  if (n == 0) return;
  philox_probe_kernel<<<blocks_for(n), kThreads>>>(ctr, key, n, out);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
}

void device_draw_probe(const DrawProbe* draws, size_t n, uint32_t* out) {
  if (n == 0) return;
  draw_probe_kernel<<<blocks_for(n), kThreads>>>(draws, n, out);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
}

}  // namespace pagedw2v
