#pragma once
/// @file transfer_hybrid.hpp
/// The hybrid rows of `pagedw2v bench transfer` (transfer_bench.hpp): part of the rows by our
/// zero-copy kernel, the rest by host threads and DMA at the same time, for each share of
/// TransferBenchOptions::hybrid_fractions.

#include <string>

#include "bench/transfer_bench.hpp"
#include "bench/transfer_rig.hpp"

namespace pagedw2v::transfer {

/// Hybrid: for a share f, the first k = f·n ids of a set go by ours (GPU sort + dedup, then
/// the zero-copy kernel into slots [0, k)) while host threads move ids [k, n) as drawn through
/// the pinned staging buffer, chunk by chunk; each chunk is one cudaMemcpyAsync on a second
/// stream, straight between its staging rows and slots [k + begin, k + end). Back: the kernel
/// scatters slots [0, k) while the chunks' copies to staging run, and host threads scatter
/// each chunk into the table once its copy's event has fired.
/// Adds a row a share to `result` (and the best share each way); returns the first row's failure
/// (wrong data or a failed call; that row is marked FAILED), or "" when every row ran.
std::string time_hybrids(Rig& rig, TransferBenchResult& result);

}  // namespace pagedw2v::transfer
