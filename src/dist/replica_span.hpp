#pragma once
/// @file replica_span.hpp
/// Which runs over CPU ranks replicate their tables (replica_backend.hpp), and the periods of
/// their sums: pure rules, without MPI, so that tests and messages can use them anywhere.

#include <algorithm>
#include <cstdint>

#include "backend.hpp"
#include "options.hpp"
#include "params.hpp"

namespace pagedw2v::dist {

/// The shortest span a rank trains (two work blocks), as sharded ranks do.
inline constexpr uint64_t kReplicaLeastSpanWords = 2 * kBlockWords;
/// Rows combined after every span: the most frequent words.
inline constexpr uint64_t kReplicaHotRows = 8192;
/// Words each rank trains in a span: two words a row of the vocabulary (whole blocks), from
/// kReplicaLeastSpanWords to kReplicaSpanWords, and at least a block for each of the rank's
/// threads. The span bounds how stale the frequent rows get: on mix5m (34 k words, 2 ranks)
/// spans of 65,536 and 131,072 words a rank with the frequent rows summed every span kept one
/// process's quality, while 262,144 words with every row summed every span did not; on the
/// tests' 830 words, 8,192 kept one process's loss and 32,768 did not (README, "Distributed
/// training").
inline constexpr uint64_t kReplicaSpanWords = 65536;
inline uint64_t replica_span_words(uint64_t vocabulary, uint32_t threads) {
  const uint64_t rows = std::clamp<uint64_t>(2 * vocabulary / kBlockWords * kBlockWords,
                                             kReplicaLeastSpanWords, kReplicaSpanWords);
  return std::max<uint64_t>(rows, uint64_t{threads} * kBlockWords);
}
/// Spans between two combines of every row (a million words a rank).
inline constexpr uint64_t kReplicaColdSpans = 16;
/// Whether replicated ranks sum every row after the span [first_block, last_block) of an epoch
/// of `epoch_blocks` blocks, spans of `span_words` words over all ranks: at the end of a cold
/// period (kReplicaColdSpans spans, counted in blocks from the epoch's start, so that a resumed
/// run sums where the run it continues did) or of the epoch; else only the frequent rows.
inline bool replica_sums_every_row(uint64_t first_block, uint64_t last_block, uint64_t epoch_blocks,
                                   uint64_t span_words) {
  const uint64_t period = kReplicaColdSpans * span_words / kBlockWords;
  return last_block >= epoch_blocks || (period > 0 && last_block / period != first_block / period);
}
/// The largest vocabulary that is replicated: up to it, the rows combined every cold period
/// cost no more bytes a word than the frequent rows combined every span.
inline constexpr uint64_t kReplicaMostRows = kReplicaHotRows * kReplicaColdSpans;

/// Whether CPU ranks train `data` on replicated tables: sgd, and a vocabulary of at most
/// kReplicaMostRows words.
inline bool trains_on_replicas(const TrainData& data) {
  return data.optimizer.kind == OptimizerKind::kSgd && data.keep->words() <= kReplicaMostRows;
}

/// Words each GPU rank trains in a span: four words a row of the vocabulary (whole blocks), from
/// kReplicaLeastSpanWords to 131,072, the longest span whose frequent rows kept mix5m's quality
/// on the CPU (README, "Distributed training").
inline constexpr uint64_t kGpuReplicaSpanWords = 131072;
inline uint64_t gpu_replica_span_words(uint64_t vocabulary) {
  return std::clamp<uint64_t>(4 * vocabulary / kBlockWords * kBlockWords, kReplicaLeastSpanWords,
                              kGpuReplicaSpanWords);
}

/// Whether replicated tables on GPU ranks can train `data`: skip-gram sgd without a negative
/// pool (what gpu/part_trainer.hpp trains).
inline bool gpu_replicas_train(const TrainData& data) {
  return data.params.model == ModelKind::kSkipGram && data.params.negative_pool == 0 &&
         data.optimizer.kind == OptimizerKind::kSgd;
}

/// Whether GPU ranks train `data` on replicated tables: when asked (`tables`), or by default
/// (kAuto) when they can and the vocabulary is at most kReplicaMostRows words. Rank 0 of two
/// on mix5m × 4 trained at 1.92 times one process's words/s on replicated tables (the sums'
/// passes counted, the all-reduce between GPUs not) against 1.27 times on parts, whose every
/// rank visits every centre (README, "A GPU a rank").
inline bool gpu_ranks_replicate(const TrainData& data, RankTables tables) {
  if (tables == RankTables::kReplicated) return true;
  return tables == RankTables::kAuto && gpu_replicas_train(data) &&
         data.keep->words() <= kReplicaMostRows;
}

}  // namespace pagedw2v::dist
