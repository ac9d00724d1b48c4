#pragma once
/// @file replica_backend.hpp
/// The backend of a CPU rank when the vocabulary is small: whole copies of both tables on every
/// rank (data-parallel, as TorchRec replicates its small tables and pWord2Vec its models), each
/// rank training its share of every span on its copy with the CPU backend as one process would,
/// and the ranks summing what the span changed. The frequent rows change most and go stale
/// first, so they are combined after every span and the others every kReplicaColdSpans spans
/// (replica_span.hpp):
///   train the share → delta = copy − value at the last combine (the snapshot), of the rows
///   [0, kReplicaHotRows) (ids are in frequency order), or of every row when the span ends a
///   cold period or the epoch → sum the deltas over the ranks (MpiComm::sum) → snapshot and
///   copy = snapshot + sum → the owned rows (owned_rows.hpp) refreshed from the copy when every
///   row was combined → the span's statistics and the agreed stop (end_span).
/// Staleness: a frequent row misses the other ranks' changes for at most one span, any other
/// row for at most one cold period (docs/notebook.md, "Distributed training": mix5m's quality held
/// with these periods and fell below the floor when every row waited a quarter-million words).
/// Every rank holds its owned rows as with sharding (checkpoints and the export gather them),
/// and besides them the copy and the snapshot of both tables: 4 · 4 · dim bytes a row of the
/// vocabulary, which is why --rank-tables auto replicates only vocabularies of at most
/// kReplicaMostRows rows, and only for runs of at least kReplicaLeastSpans spans (shorter runs
/// lose quality to their spans' staleness); the others are sharded (sharded_backend.hpp), as are
/// optimizers with state. sync_to_host() combines every row first, so a checkpoint holds what every
/// rank trains on next and resumes exactly with the same N (a run stopped by a signal mid-epoch
/// resumes as it would have gone on after that combine). Built only with MPI.

#include <atomic>
#include <cstdint>
#include <memory>

#include "backend/backend.hpp"
#include "dist/mpi_comm.hpp"
#include "dist/replica_span.hpp"
#include "dist/sharded_backend.hpp"

namespace pagedw2v::dist {

/// The whole tables `whole` (input and output, `words` rows each, fp32) from the owned rows of
/// every rank (`owned`: this rank's, compact), all-gathered a block of rows at a time.
/// Collective.
void gather_whole_tables(MpiComm& comm, const Model& owned, uint64_t words, Model& whole);

/// The backend of this rank (see above) over `model`, its owned rows, with `threads` CPU
/// threads. Throws UsageError for a vocabulary smaller than the ranks, Error when the copies
/// do not fit in memory.
std::unique_ptr<ShardedBackend> make_replica_backend(MpiComm& comm, Model& model,
                                                     const TrainData& data, uint32_t threads,
                                                     std::atomic<int>& agreed_stop,
                                                     const std::atomic<int>* stop);

}  // namespace pagedw2v::dist
