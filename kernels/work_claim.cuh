#pragma once
/// @file work_claim.cuh
/// In-order work hand-out for the kernels that move rows between host and device tables
/// (gather.cu, paging.cu): instead of striding over the items, each warp claims the next batch
/// from a counter when it is done with its last, so the items in flight are always a narrow
/// window that walks the (sorted) list in order. Zero-copy moves of host rows are bound by the
/// GPU's translation of host addresses, which is far faster for addresses close together
/// (docs/design-kernels.md). The counter is one device word per launch that may run at the same
/// time as another; reset_claim zeroes it on the launch's stream. Include from .cu only.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda_check.hpp"

namespace pagedw2v::detail {

/// The first item of the calling warp's next batch of `count` items. Every lane of the warp must
/// call it together; all get the same value.
__device__ __forceinline__ uint64_t claim_batch(unsigned long long* counter, uint32_t count) {
  unsigned long long base = 0;
  if ((threadIdx.x & 31) == 0) base = atomicAdd(counter, static_cast<unsigned long long>(count));
  return __shfl_sync(0xffffffffu, base, 0);
}

/// Zeroes `counter` (when not null) on `stream`, before the launch that claims from it.
inline void reset_claim(unsigned long long* counter, cudaStream_t stream) {
  if (counter != nullptr) {
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(counter, 0, sizeof(unsigned long long), stream));
  }
}

}  // namespace pagedw2v::detail
