#pragma once
/// @file ranks.hpp
/// The ranks of a distributed run as the trainer sees them: who this process is, the few
/// decisions every rank must take together (stop, timed checkpoints), and the backend that trains
/// this rank's share. No MPI type appears here, so the trainer compiles without MPI; the MPI
/// implementation is dist/mpi_ranks.cpp, built when MPI is found (PAGEDW2V_DISTRIBUTED).
///
/// Roles: every rank counts the vocabulary and encodes the corpus; rank r owns the rows
/// `id % N == r` (dist/row_owners.hpp), holds them (dist/owned_rows.hpp: compact, 1/N of the
/// tables, on every rank) and trains its share of each span of work blocks on them and on copies
/// of the other rows the share touches. Rank 0 alone writes files: it gathers the owners' rows a
/// block at a time, in id order, and hands each block to the files it writes (gather_rows), so
/// that no rank ever holds the whole tables.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "config/options.hpp"
#include "dist/rank_backend_kind.hpp"
#include "dist/rank_memory.hpp"
#include "gpu/device_facts.hpp"
#include "gpu/part_trainer.hpp"
#include "io/row_block.hpp"

namespace pagedw2v::dist {

class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;
  /// Whether this rank writes the run's files (rank 0).
  bool writes_files() const { return rank() == 0; }

  /// Rank 0's `value`, on every rank. Collective: every rank calls it at the same point.
  virtual bool rank0_decides(bool value) = 0;
  /// Throws Error saying that the ranks disagree on `what` unless every rank passes the same
  /// `value`. Collective.
  virtual void check_same(uint64_t value, const std::string& what) = 0;

  /// The model of this rank: its owned rows, compact (dist/owned_rows.hpp), initialised as the
  /// whole tables give them, out of a vocabulary of `rows` words. (Resuming, a rank reads its
  /// rows alone from the checkpoint: load_checkpoint's RowSelection {rank(), size()}.)
  virtual Model allocate_owned_rows(uint64_t rows, uint32_t dim, OptimizerKind kind, uint64_t seed,
                                    uint32_t threads, const std::string& hint) = 0;

  /// The backend `kind` that trains this rank's share of each span (dist/sharded_backend.hpp;
  /// the run's plan chose it) over `model`, whose rows this rank owns as row_owners.hpp says: on
  /// `threads` CPU threads, or on the rank's GPU `gpu` (one warp per launch when `single_warp`).
  virtual std::unique_ptr<Backend> make_backend(Model& model, const TrainData& data,
                                                uint32_t threads, const GpuGrant* gpu,
                                                bool single_warp, RankBackendKind kind) = 0;
  /// The stop signal every rank agreed on at the end of the last span (0: none). The trainer
  /// reads this instead of its own signal flag, so that every rank stops at the same span.
  virtual const std::atomic<int>* agreed_stop() const = 0;
  /// The rows of words [0, rows) of `tables` (each rank passes its owned rows of the same tables,
  /// compact, float32, in the same order), gathered on rank 0 a block at a time in id order:
  /// rank 0 hands each block to `take` (RowBlock::tables in the order of `tables`), and holds one
  /// block of each table at a time; `take` is not called on the other ranks. Collective.
  virtual void gather_rows(const std::vector<const HostTable*>& tables, uint64_t rows,
                           const std::function<void(const RowBlock&)>& take) = 0;

  /// What every rank held (after make_backend), on rank 0; empty on the others. Collective.
  virtual std::vector<RankMemory> memory_of_ranks() = 0;
};

/// Whether this process was started by an MPI launcher (mpirun, srun) with more than one rank.
bool launched_with_ranks();
/// This process's rank as the launcher's environment gives it (0 when not launched with ranks):
/// known before MPI starts, so that rank 0 alone prints the settings.
uint32_t launch_rank();
/// The CPU threads a rank takes when --threads is not given: the cores of its host shared by the
/// ranks the launcher started on that host (at least one).
uint32_t default_threads_per_rank();

/// Gives this rank one of its host's GPUs, before anything starts CUDA: the launcher's local
/// rank modulo the GPUs visible (CUDA_VISIBLE_DEVICES when set, else the driver's list of
/// GPUs), written to CUDA_VISIBLE_DEVICES. With one GPU, or when the local rank is not known,
/// every rank keeps what it sees (ranks then share a GPU).
void choose_gpu_of_local_rank();

/// The hardware queues CUDA gives a process without ranks, before anything starts CUDA: four
/// (CUDA_DEVICE_MAX_CONNECTIONS), as many as the streams that run at once in paged training (two
/// training, the pieces' collection, the row moves). The driver's default of eight maps about
/// 40 MB more host memory for the whole run at the same speed. A value the user set is kept,
/// and ranks keep the driver's default for NCCL's streams beside the backend's.
void limit_gpu_queues();

/// Joins the ranks of this job when it was launched with more than one (MPI_Init), else
/// returns null. `stop` is the process's signal flag: a rank that waits on the others and is
/// asked to stop (mpirun ends the job when a rank dies) gives up with one clear error.
/// Throws Error when launched with several ranks by a build without MPI.
std::unique_ptr<Ranks> join_ranks(const std::atomic<int>* stop, const std::string& output);

/// Ends this job after an error on this rank: prints `message` (one line, naming the rank) and
/// aborts every rank (MPI_Abort) with `code`, since the others may be waiting on this one.
[[noreturn]] void abort_job(Ranks& ranks, const std::string& message, int code);

}  // namespace pagedw2v::dist
