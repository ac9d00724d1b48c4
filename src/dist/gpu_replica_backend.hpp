#pragma once
/// @file gpu_replica_backend.hpp
/// The backend of a rank with a GPU when the vocabulary is small: replicated tables
/// (replica_backend.hpp) whose copies live on the GPUs. Each rank holds both whole tables on
/// its GPU (gpu/part_trainer.hpp with one part: the launches of one process) and a snapshot of
/// them beside; it trains its share of every span there, then the ranks sum what the span
/// changed, on the GPUs: delta = copy − snapshot (kernels/replica_delta.hpp), summed over the
/// ranks by an NCCL all-reduce when every rank has a GPU of its own (over NVLink inside a
/// host), else through pinned host memory and MPI, and copy = snapshot = snapshot + sum. The
/// frequent rows (ids below kReplicaHotRows) are summed after every span and every row after
/// every kReplicaColdSpans spans and at each epoch's end, as on the CPU. Spans are longer than
/// the CPU's (gpu_replica_span_words): a launch and a sum cost time whatever the span.
///
/// Owns: the device snapshot, the summing path (NCCL communicator or pinned chunk), the
/// statistics and the agreed stop. The model a rank holds is its owned rows; sync_to_host()
/// sums every row and refreshes them from the GPU, so checkpoints and the export gather them as
/// for every rank. Built only with MPI and CUDA.

#include <atomic>
#include <cstdint>
#include <memory>

#include "backend/backend.hpp"
#include "dist/mpi_comm.hpp"
#include "dist/replica_span.hpp"
#include "dist/sharded_backend.hpp"

namespace pagedw2v::dist {

/// The backend of this rank (see above) over `model`, its owned rows; one warp a launch when
/// `single_warp` (deterministic). Throws Error when the copies do not fit on the GPU.
std::unique_ptr<ShardedBackend> make_gpu_replica_backend(MpiComm& comm, Model& model,
                                                         const TrainData& data, const GpuGrant& gpu,
                                                         bool single_warp,
                                                         std::atomic<int>& agreed_stop,
                                                         const std::atomic<int>* stop);

}  // namespace pagedw2v::dist
