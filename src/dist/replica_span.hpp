#pragma once
/// @file replica_span.hpp
/// Which runs over CPU ranks replicate their tables (replica_backend.hpp), and the periods of
/// their sums: pure rules, without MPI, so that tests and messages can use them anywhere.

#include <algorithm>
#include <cstdint>

#include "backend/backend.hpp"
#include "config/options.hpp"
#include "gpu/part_trainer.hpp"
#include "model/params.hpp"

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
/// tests' 830 words, 8,192 kept one process's loss and 32,768 did not (docs/notebook.md,
/// "Distributed training").
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

/// The fewest spans a run takes on replicated tables by default: six cold periods. Summing what
/// each rank changed on its copy trains as one process does once a run has many sums, and not
/// when it has few: each rank trains a span without the others' changes. Two ranks of one
/// thread against one process of two (docs/notebook.md, "Distributed training"): runs of 22, 40 and
/// 61 spans lost quality (mix5m, one epoch: WordSim-353 0.175 against 0.211; walks over 40,000 and
/// 100,000 nodes, one epoch: a tenth to a half fewer graph neighbours among a node's nearest),
/// whether every row was summed every span or not; runs of 74 to 305 spans kept it.
inline constexpr uint64_t kReplicaLeastSpans = 96;
/// Spans of the whole run of `data` (every epoch, including those a resumed run has done) with
/// `rank_span_words` words a rank over `ranks` ranks.
inline uint64_t replica_run_spans(const TrainData& data, uint32_t ranks, uint64_t rank_span_words) {
  const uint64_t words = uint64_t{data.params.epochs} * data.params.words_per_epoch;
  const uint64_t span = std::max<uint64_t>(1, rank_span_words * std::max<uint32_t>(1, ranks));
  return (words + span - 1) / span;
}

/// Whether CPU ranks train `data` on replicated tables by default: sgd, a vocabulary of at most
/// kReplicaMostRows words, and a run of at least kReplicaLeastSpans spans over `ranks` ranks of
/// `threads` threads.
inline bool trains_on_replicas(const TrainData& data, uint32_t ranks, uint32_t threads) {
  const uint64_t words = data.keep->words();
  return data.optimizer.kind == OptimizerKind::kSgd && words <= kReplicaMostRows &&
         replica_run_spans(data, ranks, replica_span_words(words, threads)) >= kReplicaLeastSpans;
}

/// Words each GPU rank trains in a span: four words a row of the vocabulary (whole blocks), from
/// kReplicaLeastSpanWords to 131,072, the longest span whose frequent rows kept mix5m's quality
/// on the CPU (docs/notebook.md, "Distributed training").
inline constexpr uint64_t kGpuReplicaSpanWords = 131072;
inline uint64_t gpu_replica_span_words(uint64_t vocabulary) {
  return std::clamp<uint64_t>(4 * vocabulary / kBlockWords * kBlockWords, kReplicaLeastSpanWords,
                              kGpuReplicaSpanWords);
}

/// Whether `ranks` GPU ranks train `data` on replicated tables: when asked (`tables`), or by
/// default (kAuto) when they can, the vocabulary is at most kReplicaMostRows words and the run
/// takes at least kReplicaLeastSpans spans, as on the CPU. Rank 0 of two on mix5m × 4 trained
/// at 1.92 times one process's words/s on replicated tables (the sums' passes counted, the
/// all-reduce between GPUs not) against 1.27 times on parts, whose every rank visits every
/// centre (docs/notebook.md, "A GPU a rank").
inline bool gpu_ranks_replicate(const TrainData& data, RankTables tables, uint32_t ranks) {
  if (tables == RankTables::kReplicated) return true;
  const uint64_t words = data.keep->words();
  return tables == RankTables::kAuto && gpu_parts_train(data) && words <= kReplicaMostRows &&
         replica_run_spans(data, ranks, gpu_replica_span_words(words)) >= kReplicaLeastSpans;
}

}  // namespace pagedw2v::dist
