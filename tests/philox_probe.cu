#include "philox_probe.hpp"

#include <curand_kernel.h>

#include "kernels/cuda_check.hpp"

namespace pagedw2v {
namespace {

// One thread per (counter, key) pair.
__global__ void philox_probe_kernel(const uint4* ctr, const uint2* key, size_t n, uint4* out) {
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) out[i] = curand_Philox4x32_10(ctr[i], key[i]);
}

}  // namespace

void curand_philox_probe(const uint32_t* ctr, const uint32_t* key, size_t n, uint32_t* out) {
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  philox_probe_kernel<<<blocks, 256>>>(reinterpret_cast<const uint4*>(ctr),
                                       reinterpret_cast<const uint2*>(key), n,
                                       reinterpret_cast<uint4*>(out));
  PAGEDW2V_CUDA_TRY(cudaGetLastError());
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
}

}  // namespace pagedw2v
