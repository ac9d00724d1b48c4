#pragma once
/// @file row_owners.hpp
/// Which rank owns a row and which work blocks a rank trains: pure functions of (id, ranks),
/// the same on every rank, testable without MPI.
///
/// Rows are dealt round-robin (`id % N`): ids are in descending frequency order, so every rank
/// owns its share of the frequent rows and the exchange traffic is balanced. A span of work
/// blocks is cut into N contiguous runs, one per rank, so each rank trains a run of the corpus in
/// its order (its learning rate follows the word positions as on one rank).

#include <cstdint>

namespace pagedw2v::dist {

struct RowOwners {
  uint32_t ranks = 1;

  uint32_t owner(uint64_t id) const { return static_cast<uint32_t>(id % ranks); }
  /// Rows of a `rows`-row table that `rank` owns.
  uint64_t owned(uint64_t rows, uint32_t rank) const {
    return rank < rows ? (rows - rank + ranks - 1) / ranks : 0;
  }
};

/// The blocks [first, last) that `rank` of `ranks` trains out of the span [span_first, span_last).
struct BlockRange {
  uint64_t first = 0;
  uint64_t last = 0;
};

inline BlockRange share_of_span(uint64_t span_first, uint64_t span_last, uint32_t rank,
                                uint32_t ranks) {
  const uint64_t n = span_last - span_first;
  return {span_first + n * rank / ranks, span_first + n * (rank + 1) / ranks};
}

}  // namespace pagedw2v::dist
