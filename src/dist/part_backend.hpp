#pragma once
/// @file part_backend.hpp
/// The backend of a rank of a run over GPUs whose rows stay on the GPUs: the tables cut into
/// parts by owner (row_owners.hpp: word id in part id % N), as GraphVite cuts a graph's
/// embeddings. Rank r holds the input rows of part r on its GPU for the whole run, and one
/// output part at a time; for each span of work blocks every rank launches N times over the
/// whole span, each time against the output part it holds, training only the pairs whose
/// context is in its input part and whose centre is in that output part (gpu/part_trainer.hpp),
/// and between launches the output parts go one rank round the ring (part_rotation.hpp: NCCL
/// between GPUs, else through host memory). No two ranks ever write the same row, so nothing is
/// stale: every pair of the span trains once, on the rank that holds both of its rows, with the
/// learning rate of its position; what changes against one process is the order of the pairs
/// within a span (spans of eight words a row of the vocabulary: a pair of parts trains alone
/// for a span, and longer spans lost quality; part_span_words) and that a pair's negatives come
/// from its centre's part (the noise distribution restricted to the part, NoiseTable::part).
/// The bytes exchanged per span are the output table once round the ring
/// (docs/design-distributed.md).
///
/// Owns: the order of the launches and rotations, the statistics and the agreed stop. The
/// model a rank holds is its owned rows (owned_rows.hpp); sync_to_host() brings its parts home
/// and copies them there, so checkpoints and the export gather them as for every rank.
/// Built only with MPI and CUDA.

#include <atomic>
#include <cstdint>
#include <memory>

#include "backend/backend.hpp"
#include "dist/mpi_comm.hpp"
#include "dist/sharded_backend.hpp"

namespace pagedw2v::dist {

/// The backend of this rank (see above) over `model`, its owned rows; one warp a launch when
/// `single_warp` (deterministic). Throws Error when the parts do not fit on the GPU.
std::unique_ptr<ShardedBackend> make_part_backend(MpiComm& comm, Model& model,
                                                  const TrainData& data, const GpuGrant& gpu,
                                                  bool single_warp, std::atomic<int>& agreed_stop,
                                                  const std::atomic<int>* stop);

}  // namespace pagedw2v::dist
