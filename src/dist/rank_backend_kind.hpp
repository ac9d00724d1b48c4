#pragma once
/// @file rank_backend_kind.hpp
/// Which backend trains each rank's share of a run over MPI ranks: the one rule, pure and without
/// MPI, that the run's plan (train/run_plan.hpp) applies once; make_sharded_backend
/// (sharded_backend.hpp) builds what the plan chose and decides nothing.

#include <cstdint>
#include <string>

#include "backend/backend.hpp"
#include "base/error.hpp"
#include "config/options.hpp"
#include "dist/replica_span.hpp"
#include "gpu/part_trainer.hpp"

namespace pagedw2v::dist {

/// The backends of a rank.
enum class RankBackendKind {
  kGpuReplica,  ///< whole tables on every GPU, the ranks sum their changes (gpu_replica_backend)
  kGpuParts,    ///< the rows on the GPUs in parts, the output parts moving (part_backend)
  kCpuReplica,  ///< whole tables on every CPU rank, the ranks sum their changes (replica_backend)
  /// Each rank owns 1/N of the rows and fetches the others' for each span (sharded_backend),
  /// training them on its CPU threads or, with a GPU, on its GPU through host memory.
  kRankRows,
};

inline std::string to_string(RankBackendKind kind) {
  switch (kind) {
    case RankBackendKind::kGpuReplica:
      return "gpu-replica";
    case RankBackendKind::kGpuParts:
      return "gpu-parts";
    case RankBackendKind::kCpuReplica:
      return "cpu-replica";
    case RankBackendKind::kRankRows:
      return "rank-rows";
  }
  return "?";
}

/// The backend of `ranks` ranks training `data` (its sizes as the run trains them: the negative
/// pool the plan settled) with `threads` CPU threads each, the tables held as `tables` asks, on
/// the ranks' GPUs when `gpu`. GPU ranks: replicated tables when gpu_ranks_replicate, else parts
/// for skip-gram sgd with no pool (gpu_parts_train), else the rows through host memory. CPU
/// ranks: replicated tables when asked, or by default when trains_on_replicas, else sharded.
/// Throws UsageError for --rank-tables replicated over GPU ranks with a run they cannot
/// replicate.
inline RankBackendKind choose_rank_backend(const TrainData& data, RankTables tables, uint32_t ranks,
                                           uint32_t threads, bool gpu) {
  if (gpu) {
    if (gpu_ranks_replicate(data, tables, ranks)) {
      if (!gpu_parts_train(data)) {
        throw UsageError(
            "--rank-tables replicated over GPU ranks trains skip-gram with sgd and no "
            "--negative-pool; give --rank-tables auto or sharded for the others");
      }
      return RankBackendKind::kGpuReplica;
    }
    return gpu_parts_train(data) ? RankBackendKind::kGpuParts : RankBackendKind::kRankRows;
  }
  if (tables == RankTables::kReplicated ||
      (tables == RankTables::kAuto && trains_on_replicas(data, ranks, threads))) {
    return RankBackendKind::kCpuReplica;
  }
  return RankBackendKind::kRankRows;
}

}  // namespace pagedw2v::dist
