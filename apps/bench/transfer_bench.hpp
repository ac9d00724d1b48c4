#pragma once
/// @file transfer_bench.hpp
/// `pagedw2v bench transfer`: SpeedTorch's benchmark — `rows` random rows of `dim` fp32 moved
/// between a `table_rows`-row pinned, mapped host table and the GPU, each way — with the naive
/// methods and ours side by side in one run:
///   - the PCIe floor: the moved bytes over the bandwidth of a contiguous 64 MiB cudaMemcpy
///     (pinned host ↔ device), measured in the same run, each way;
///   - naive: rows gathered on the host (threads) into a pinned staging buffer, one cudaMemcpy
///     (back: one cudaMemcpy, then a host scatter);
///   - zero-copy, one row per thread (ids as drawn);
///   - zero-copy, coalesced (warp per row), ids as drawn: what sorting buys;
///   - ours: sort and deduplicate the ids on the GPU, then the coalesced zero-copy kernel over
///     the sorted ids, warps claiming their rows in order from a counter (sort time included);
///     and the same with warps striding over the rows, to show what the claims are worth;
///   - ours, DMA: sort and deduplicate, then one cudaMemcpyBatchAsync of every run of
///     consecutive ids (the run list is built on the host, its time included);
///   - with `tuning`, our kernels at other launch shapes (GatherTuning);
///   - ours, both ways at once, as paging moves rows (kernels/paging.hpp's swap): one kernel writes
///     `rows` rows back while it reads `rows` others into their places, the rows read in
///     ascending order and the rows written back in ascending or in random order, and in
///     ascending order with warps striding (one figure for both directions; needs
///     2·rows ≤ table_rows);
///   - hybrid, for each share f in `hybrid_fractions`: the first f·rows ids go by ours (sorted
///     zero-copy kernel) while, at the same time, host threads move the others through pinned
///     staging in `hybrid_chunks` chunks, each chunk one cudaMemcpyAsync on a second stream as
///     soon as it is gathered (back: each chunk scattered into the table as soon as its copy
///     lands). Timed with the host clock, since CPU work is part of the transfer; the note gives,
///     for the way to the GPU, when the kernel, the host threads and the last DMA were done
///     (medians from the start). On the H200 the copies and the kernel share one path: the
///     DMA chunks wait for the kernel, so a hybrid takes about what its parts take in turn.
/// Each figure is the median of `reps` repetitions timed with CUDA events (hybrid: the host
/// clock), after `warmup` untimed ones; the id sets rotate so no repetition finds its rows in
/// the GPU's L2. Every gather is checked against the host table, and the table is checked after
/// the scatters; the hybrid scatter is also checked on table rows poisoned before it runs.
/// Compiled only in CUDA builds (PAGEDW2V_HAVE_TRANSFER_BENCH).

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/pinned_allocator.hpp"

namespace pagedw2v {

struct TransferBenchOptions {
  uint32_t rows = 131072;          ///< rows moved per transfer
  uint32_t dim = 128;              ///< floats per row
  uint64_t table_rows = 10000000;  ///< rows of the host table
  uint32_t reps = 30;              ///< timed repetitions (median reported)
  uint32_t warmup = 3;
  uint32_t host_threads = 0;  ///< threads of the host gathers and scatters; 0 = min(cores, 16)
  uint64_t seed = 1;
  bool tuning = false;  ///< also time our kernels at other launch shapes (GatherTuning)
  /// Shares of the rows that the hybrid method moves by the zero-copy kernel, each in [0, 1];
  /// the rest go through host threads and DMA. Empty: no hybrid rows.
  std::vector<double> hybrid_fractions = {0.0, 0.5, 0.6, 0.7, 0.8};
  uint32_t hybrid_chunks = 16;  ///< chunks of the hybrid's host part, each one DMA
  PinnedAllocatorOptions pin;   ///< how the table is pinned (--slab-mib, --pin-method, --pin)
};

struct TransferBenchRow {
  std::string method;
  double to_gpu_ms = -1;   ///< median; negative when the method could not run
  double to_host_ms = -1;  ///< median; negative when the method could not run
  std::string note;        ///< why it could not run, or what it moved
};

struct TransferBenchResult {
  std::string device;
  double pin_seconds = 0;  ///< allocating, pinning and zeroing the table
  double floor_to_gpu_ms = 0;
  double floor_to_host_ms = 0;
  double ours_to_gpu_ms = 0;
  double ours_to_host_ms = 0;
  double sort_ms = 0;            ///< sort + dedup alone
  double hybrid_to_gpu_ms = -1;  ///< the best hybrid share each way; negative when none ran
  double hybrid_to_host_ms = -1;
  double hybrid_fraction_to_gpu = 0;  ///< the share that gave hybrid_to_gpu_ms
  double hybrid_fraction_to_host = 0;
  std::vector<TransferBenchRow> rows;
};

/// Runs the benchmark and prints its table to `out`. Throws Error without a CUDA device, when
/// the table cannot be pinned, or when a method moves wrong data (a hybrid row that does is
/// marked FAILED in the printed table first); UsageError for bad shapes.
TransferBenchResult run_transfer_bench(const TransferBenchOptions& options, std::FILE* out);

}  // namespace pagedw2v
