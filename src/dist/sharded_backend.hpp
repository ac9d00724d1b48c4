#pragma once
/// @file sharded_backend.hpp
/// The backend of a distributed CPU run (row-wise sharding, as TorchRec shards embedding
/// tables). For each span of work blocks the trainer hands every rank:
///   share (row_owners.hpp) → the rows the share needs (needed_rows.hpp) → a place for each
///   (working_set.hpp: the rank's own rows where it holds them, the others' in copy rows) →
///   fetch the others' rows from their owners (row_exchange.hpp) → train the share with the CPU
///   backend on those rows, its own in place → return the deltas of the fetched rows to their
///   owners → sum the span's statistics and agree on a stop.
/// A fetched copy is stale only within a span: it misses what the other ranks add to the row
/// during that span (docs/design-distributed.md). The model a rank holds is its owned rows,
/// compact (owned_rows.hpp), on every rank; checkpoints and the export gather them block by block
/// (Ranks::gather_rows), so sync_to_host() has nothing to do.
/// The run's plan chooses the backend (rank_backend_kind.hpp) and make_sharded_backend builds it:
/// on the CPU, sgd over a vocabulary of at most kReplicaMostRows words, for a run of at least
/// kReplicaLeastSpans spans, keeps whole copies of the tables on every rank instead
/// (replica_backend.hpp). With --device cuda, skip-gram sgd without a negative pool keeps the
/// rows on the GPUs, replicated (gpu_replica_backend.hpp) or in parts (part_backend.hpp). Other
/// runs with --device cuda (sgd) train a rank's share on its GPU instead of its CPU threads: the
/// share's rows, laid out as one compact pair of tables, go to the GPU, train there
/// (gpu/row_set_trainer.hpp) and come back before the deltas are returned; the exchanges are the
/// same. Built only with MPI.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "backend/backend.hpp"
#include "config/options.hpp"
#include "dist/mpi_comm.hpp"
#include "dist/rank_backend_kind.hpp"
#include "gpu/device_facts.hpp"

namespace pagedw2v::dist {

/// Words each rank trains between two exchanges, at least (two work blocks, or one block per
/// thread when the rank has more threads, so that every thread has a block): larger spans
/// exchange fewer bytes per word (a frequent row is fetched once per span), smaller ones keep
/// the copies fresher. docs/notebook.md, "Distributed training", has the measured trade.
inline constexpr uint64_t kRankSpanWords = 2 * kBlockWords;
/// The most for a rank that trains on its GPU: each span costs copies to and from the GPU and a
/// launch whatever its size, so spans are longer (mix5m's quality held at this span on the CPU:
/// docs/notebook.md, "Distributed training"), but no longer than the vocabulary (whole blocks, two
/// at the least): a span that touches every row many times leaves the copies stale (on 830 words,
/// spans of 32,768 words left the loss at 1.74 against one process's 1.22).
inline constexpr uint64_t kGpuRankSpanWords = 8 * kBlockWords;
inline uint64_t gpu_rank_span_words(uint64_t vocabulary) {
  return std::clamp<uint64_t>(vocabulary / kBlockWords * kBlockWords, kRankSpanWords,
                              kGpuRankSpanWords);
}

/// The backend of one rank, and what it holds.
class ShardedBackend : public Backend {
 public:
  /// Rows of each table (input, output, and each state table) the model of this rank holds.
  virtual uint64_t table_rows() const = 0;
  /// The most rows of each copy table (working_set.hpp) this rank has held.
  virtual uint64_t peak_working_rows() const = 0;
};

/// The end of a span on every rank: the span's statistics of every rank, summed (a loss that
/// is not finite on one rank is so on all), and the largest stop signal of any rank written to
/// `agreed_stop` (`stop`: this rank's, may be null). Collective.
SpanStats end_span(MpiComm& comm, const SpanStats& mine, std::atomic<int>& agreed_stop,
                   const std::atomic<int>* stop);

/// The backend `kind` (the run's plan chose it: rank_backend_kind.hpp) for `model` and `data`,
/// with `threads` CPU threads on this rank, or its GPU `gpu` for the GPU kinds and for kRankRows
/// on GPU ranks (one warp per launch when `single_warp`: a deterministic run); writes the agreed
/// stop signal to `agreed_stop`. On rank r `model` holds the rows r owns, compact
/// (owned_rows.hpp); every rank's rows start as one process's would. Decides nothing: throws
/// Error for a kind that disagrees with `gpu` (a GPU kind without one, kCpuReplica with one),
/// UsageError for a GPU in a build without CUDA.
std::unique_ptr<ShardedBackend> make_sharded_backend(MpiComm& comm, Model& model,
                                                     const TrainData& data, uint32_t threads,
                                                     const GpuGrant* gpu, bool single_warp,
                                                     RankBackendKind kind,
                                                     std::atomic<int>& agreed_stop,
                                                     const std::atomic<int>* stop);

}  // namespace pagedw2v::dist
