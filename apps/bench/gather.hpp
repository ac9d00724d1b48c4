#pragma once
/// @file gather.hpp
/// Moving table rows between a host table (pinned, mapped host memory, passed by its device
/// pointer) or any device table and a dense device buffer:
///   gather:  out[i, :] = table[ids[i], :]    for i in [0, n)
///   scatter: table[ids[i], :] = in[i, :]     for i in [0, n)
/// Tables and buffers are row-major with `dim` floats a row. The fast pair reads and writes
/// each row with coalesced 16-byte accesses (when dim % 4 == 0 and the pointers are 16-byte
/// aligned; 4-byte accesses otherwise); give them ids sorted and deduplicated
/// (apps/bench/unique_ids.hpp): sorted ids walk the host table in address order, and a scatter over
/// repeated ids would race. The count may live on the device (`d_n`, e.g. the output of
/// launch_sort_unique_ids), so no host synchronisation is needed between sorting and moving.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace pagedw2v {

/// Launch shape of the coalesced kernels; the defaults are what `bench transfer` reports as
/// ours, the others exist for `pagedw2v bench transfer --tuning`. Random sorted rows of a large
/// host table are bound by the GPU's address translation of host pages, not by PCIe, and that
/// cost grows with how far apart the addresses in flight are: a narrow window that walks the
/// table in order is what makes the sorted gather fast. Hence few rows in flight (one block of
/// 8 warps per multiprocessor) and a claim counter (below); the measurements are in
/// docs/design-kernels.md ("Address translation of host memory").
struct GatherTuning {
  int unroll = 4;         ///< row pieces a warp loads before it stores any: 1, 2, 4 or 8
  int blocks_per_sm = 1;  ///< most resident blocks per multiprocessor; 0 = as many as fit
};

/// out[i, :] = table[ids[i], :] for i < n, where n = min(*d_n, n_max) when d_n is not null,
/// else n_max. `table` may be mapped host memory. `claim`, when given, is one device word of
/// the caller's that no launch running at the same time uses; the launch zeroes it on `stream`
/// and the warps take their rows from it in ascending order (see GatherTuning). Without it the
/// warps stride over the rows.
void launch_gather_rows(const float* table, uint32_t dim, const uint32_t* ids, uint32_t n_max,
                        const uint32_t* d_n, float* out, cudaStream_t stream,
                        const GatherTuning& tuning = {}, unsigned long long* claim = nullptr);

/// table[ids[i], :] = in[i, :] for i < n (n and `claim` as for launch_gather_rows). Ids must be
/// distinct.
void launch_scatter_rows(float* table, uint32_t dim, const uint32_t* ids, uint32_t n_max,
                         const uint32_t* d_n, const float* in, cudaStream_t stream,
                         const GatherTuning& tuning = {}, unsigned long long* claim = nullptr);

/// The naive baseline of `pagedw2v bench transfer`: one thread copies one whole row, so a
/// warp's accesses land in 32 different rows and nothing is coalesced. Same contract as
/// launch_gather_rows with d_n = nullptr.
void launch_gather_rows_thread_per_row(const float* table, uint32_t dim, const uint32_t* ids,
                                       uint32_t n, float* out, cudaStream_t stream);

/// The naive scatter: one thread per row. Ids must be distinct.
void launch_scatter_rows_thread_per_row(float* table, uint32_t dim, const uint32_t* ids, uint32_t n,
                                        const float* in, cudaStream_t stream);

}  // namespace pagedw2v
