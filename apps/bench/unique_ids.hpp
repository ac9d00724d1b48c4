#pragma once
/// @file unique_ids.hpp
/// Sorting and deduplicating row ids on the GPU (CUB radix sort, then unique): the step between
/// collecting the ids a batch touches and moving their rows (apps/bench/gather.hpp). Position i of
/// the result is the slot of row unique[i].

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace pagedw2v {

/// Bytes of temporary storage launch_sort_unique_ids needs for up to `max_n` ids.
size_t sort_unique_ids_temp_bytes(uint32_t max_n);

/// The number of low bits that hold every id below `id_bound` (what `end_bit` should be).
uint32_t id_bits(uint64_t id_bound);

/// unique[0..*d_unique_count) = the distinct values of ids[0..n), ascending. Sorts only bits
/// [0, end_bit) (every id must be below 2^end_bit; fewer bits, fewer radix passes). `sorted`
/// is scratch of n ids; `temp` holds at least sort_unique_ids_temp_bytes(n) bytes. Nothing is
/// copied to the host: the count stays on the device for the gather that follows.
void launch_sort_unique_ids(const uint32_t* ids, uint32_t n, uint32_t end_bit, uint32_t* sorted,
                            uint32_t* unique, uint32_t* d_unique_count, void* temp,
                            size_t temp_bytes, cudaStream_t stream);

}  // namespace pagedw2v
