#pragma once
/// @file row_block.hpp
/// Consecutive rows of several tables of one width, handed to a file writer in id order: how
/// rank 0 of a distributed run writes tables it does not hold (it gathers them block by block
/// from their owners, dist/ranks.hpp), and how the writers that take such blocks are tested.

#include <cstdint>
#include <vector>

namespace pagedw2v {

/// Rows [first, first + rows) of each of `tables`, each `rows × dim` row-major floats. Which
/// table is which index is the producer's layout (RowBlock users name it).
struct RowBlock {
  uint64_t first = 0;
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::vector<const float*> tables;

  /// Row `id` (first <= id < first + rows) of table `t`.
  const float* row(size_t t, uint64_t id) const { return tables[t] + (id - first) * dim; }
};

}  // namespace pagedw2v
