#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include "base/error.hpp"
#include "bench/unique_ids.hpp"
#include "kernels/cuda_check.hpp"

namespace pagedw2v {

size_t sort_unique_ids_temp_bytes(uint32_t max_n) {
  size_t sort_bytes = 0, unique_bytes = 0;
  const int n = static_cast<int>(max_n);
  PAGEDW2V_CUDA_TRY(cub::DeviceRadixSort::SortKeys(nullptr, sort_bytes,
                                                   static_cast<const uint32_t*>(nullptr),
                                                   static_cast<uint32_t*>(nullptr), n));
  PAGEDW2V_CUDA_TRY(cub::DeviceSelect::Unique(
      nullptr, unique_bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
      static_cast<uint32_t*>(nullptr), n));
  return std::max(sort_bytes, unique_bytes);
}

uint32_t id_bits(uint64_t id_bound) {
  uint32_t bits = 1;
  while (bits < 32 && (uint64_t{1} << bits) < id_bound) ++bits;
  return bits;
}

void launch_sort_unique_ids(const uint32_t* ids, uint32_t n, uint32_t end_bit, uint32_t* sorted,
                            uint32_t* unique, uint32_t* d_unique_count, void* temp,
                            size_t temp_bytes, cudaStream_t stream) {
  if (n > static_cast<uint32_t>(INT32_MAX)) throw Error("launch_sort_unique_ids: too many ids");
  if (n == 0) {
    PAGEDW2V_CUDA_TRY(cudaMemsetAsync(d_unique_count, 0, sizeof(uint32_t), stream));
    return;
  }
  const int count = static_cast<int>(n);
  size_t bytes = temp_bytes;
  PAGEDW2V_CUDA_TRY(cub::DeviceRadixSort::SortKeys(temp, bytes, ids, sorted, count, 0,
                                                   static_cast<int>(end_bit), stream));
  PAGEDW2V_CUDA_CHECK_LAUNCH();
  bytes = temp_bytes;
  PAGEDW2V_CUDA_TRY(
      cub::DeviceSelect::Unique(temp, bytes, sorted, unique, d_unique_count, count, stream));
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

}  // namespace pagedw2v
