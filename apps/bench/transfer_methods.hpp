#pragma once
/// @file transfer_methods.hpp
/// The methods of `pagedw2v bench transfer` (transfer_bench.hpp) that move rows one way at a
/// time, or both ways in one kernel: each times its transfers on the rig (transfer_rig.hpp),
/// checks what it moved, and adds its row to the result. The hybrid is in transfer_hybrid.hpp.

#include "bench/transfer_bench.hpp"
#include "bench/transfer_rig.hpp"

namespace pagedw2v::transfer {

/// The PCIe floor: a contiguous 64 MiB pinned copy each way, scaled to the rows' bytes.
void time_floor(Rig& rig, TransferBenchResult& result);
/// Naive: host gather into pinned staging + one copy; back: one copy + host scatter.
void time_naive(Rig& rig, TransferBenchResult& result);
/// Zero-copy kernels over the ids as drawn: one row per thread, and a warp per row.
void time_zero_copy(Rig& rig, TransferBenchResult& result);
/// Ours: GPU sort + dedup, then the coalesced kernels over the sorted ids (claimed, striding,
/// and with `tuning` at other launch shapes), and the sort alone.
void time_ours(Rig& rig, TransferBenchResult& result);
/// Ours, DMA: GPU sort + dedup, the run list on the host, one batched copy of all runs.
void time_dma(Rig& rig, TransferBenchResult& result);
/// Both ways at once, as paging moves rows (needs 2·rows ≤ table_rows; no row otherwise).
void time_swaps(Rig& rig, TransferBenchResult& result);

}  // namespace pagedw2v::transfer
