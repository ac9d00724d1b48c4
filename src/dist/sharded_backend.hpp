#pragma once
/// @file sharded_backend.hpp
/// The backend of a distributed CPU run (row-wise sharding, as TorchRec shards embedding
/// tables). For each span of work blocks the trainer hands every rank:
///   share (row_owners.hpp) → the rows the share needs (needed_rows.hpp) → fetch them from
///   their owners → train the share with the CPU backend, on the owned rows and the working
///   copies → return the deltas to the owners → sum the span's statistics and agree on a stop.
/// A working copy is stale only within a span: it misses what the other ranks add to the row
/// during that span (README, "Distributed training"). sync_to_host() gathers the owned rows
/// into rank 0's tables, which then hold the whole model for checkpoints and the export.
/// Built only with MPI.

#include <atomic>
#include <cstdint>
#include <memory>

#include "backend.hpp"
#include "dist/mpi_comm.hpp"

namespace pagedw2v::dist {

/// Words each rank trains between two exchanges, at least (two work blocks, or one block per
/// thread when the rank has more threads, so that every thread has a block): larger spans
/// exchange fewer bytes per word (a frequent row is fetched once per span), smaller ones keep
/// the copies fresher. The README's "Distributed training" gives the measured trade.
inline constexpr uint64_t kRankSpanWords = 2 * kBlockWords;

/// The backend for `model` (the full tables, the same on every rank at the start) and `data`,
/// with `threads` CPU threads on this rank; writes the agreed stop signal to `agreed_stop`.
std::unique_ptr<Backend> make_sharded_backend(MpiComm& comm, Model& model, const TrainData& data,
                                              uint32_t threads, std::atomic<int>& agreed_stop,
                                              const std::atomic<int>* stop);

}  // namespace pagedw2v::dist
