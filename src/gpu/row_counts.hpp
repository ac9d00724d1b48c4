#pragma once
/// @file row_counts.hpp
/// What the pieces of a corpus touch, counted for the GPU plan (gpu_plan.hpp): the most distinct
/// rows of a sentence under hierarchical softmax, of a super-batch, of a run of blocks above the
/// hot rows, and every super-batch's distinct ids by id range. Pure passes over the corpus's
/// ids, one bit per row.

#include <cstdint>
#include <vector>

#include "model/huffman.hpp"

namespace pagedw2v {

/// The most distinct rows any one range of `tokens` (range s is [starts[s], starts[s + 1]): a
/// sentence, or a super-batch) reads under hierarchical softmax: its words' ids and the
/// inner-node rows of their paths in `tree` (the same id space, model.hpp), those at or above
/// `first` (the rows that take cache slots beside `first` hot rows). A pure pass over the
/// corpus, for the plan's reserve and an optimizer's super-batch rows.
uint64_t hs_sentence_rows(const std::vector<uint32_t>& tokens, const std::vector<uint64_t>& starts,
                          const HuffmanTree& tree, uint64_t first = 0);

/// The most distinct rows at or above a first row that any one range of `tokens` reads under
/// hierarchical softmax (hs_sentence_rows with that first row), for a ladder of first rows at
/// once: the rows one sentence needs in the row cache, whatever hot rows the plan leaves (rows
/// below them are on the GPU already, among them the inner nodes nearest the root).
struct HsRowsFrom {
  std::vector<uint64_t> firsts;  ///< ascending from 0, about a sixteenth apart
  std::vector<uint64_t> most;    ///< most[k]: the most rows at or above firsts[k] of one range
  /// At least the most rows at or above `first` of one range: exact where `first` is one of
  /// `firsts`, else those of the largest below it.
  uint64_t max_from(uint64_t first) const;
};

/// HsRowsFrom of the ranges [starts[s], starts[s + 1]) of `tokens` over the rows of `tree`'s
/// words. One pass over the corpus, as hs_sentence_rows.
HsRowsFrom hs_rows_from(const std::vector<uint32_t>& tokens, const std::vector<uint64_t>& starts,
                        const HuffmanTree& tree);

/// The most distinct ids among the tokens of one super-batch of `batch_blocks` blocks (ids below
/// `rows`). Stops at the first super-batch with more than `limit` and returns its count so far
/// (then above `limit`). Reads the corpus once (twice per super-batch) with a bit per row.
uint64_t max_super_batch_rows(const std::vector<uint32_t>& tokens,
                              const std::vector<uint64_t>& sentence_starts,
                              const std::vector<uint64_t>& blocks, uint32_t batch_blocks,
                              uint64_t rows, uint64_t limit = UINT64_MAX);

/// The most distinct ids at or above `first` (and below `rows`) among the tokens of one run of
/// `batch_blocks` blocks, the corpus cut into such runs from its start. Each of up to `threads`
/// threads counts runs of its own with a bit per row (two passes over a run's tokens); fewer
/// threads where their bitmaps would take more than 4 MiB together.
uint64_t max_run_rows_from(const std::vector<uint32_t>& tokens,
                           const std::vector<uint64_t>& sentence_starts,
                           const std::vector<uint64_t>& blocks, uint32_t batch_blocks,
                           uint64_t first, uint64_t rows, uint32_t threads);

/// The distinct ids of every super-batch by id range, so that those at or above any first id
/// (the hot rows: the rows a super-batch takes cache slots for) are bounded without reading the
/// corpus again.
struct SuperBatchRows {
  uint64_t rows = 0;             ///< ids counted: those below
  uint64_t width = 1;            ///< ids per range
  uint64_t ranges = 0;           ///< ranges per super-batch
  std::vector<uint32_t> counts;  ///< [super-batch × ranges + range]: its distinct ids there
  /// The most distinct ids at or above `first` of one super-batch, counted from the start of
  /// the range that holds `first`: exact where `first` starts a range, else at most one
  /// range's ids more.
  uint64_t max_from(uint64_t first) const;
};

/// SuperBatchRows of the super-batches of `batch_blocks` blocks over ids below `rows`, in
/// about `ranges` ranges. Reads the corpus once, as max_super_batch_rows.
SuperBatchRows super_batch_rows(const std::vector<uint32_t>& tokens,
                                const std::vector<uint64_t>& sentence_starts,
                                const std::vector<uint64_t>& blocks, uint32_t batch_blocks,
                                uint64_t rows, uint64_t ranges = 4096);

}  // namespace pagedw2v
