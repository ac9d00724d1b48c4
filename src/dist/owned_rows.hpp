#pragma once
/// @file owned_rows.hpp
/// The rows a rank of a distributed run holds as their owner (row_owners.hpp): the words
/// `id % N == rank`, with their optimizer state. Every rank holds them compact — row k of each of
/// its tables is word `rank + k·N`, so its tables are 1/N of the vocabulary; rank 0 gathers the
/// others' rows a block at a time for checkpoints and the export (Ranks::gather_rows). (A view of
/// step 1, the whole tables, is what one process trains; tests compare the two.) Pure functions
/// and a small view, testable without MPI.

#include <cstdint>

#include "dist/row_owners.hpp"
#include "model/model.hpp"

namespace pagedw2v::dist {

/// Where a rank's owned rows lie: the row of word `id` (owned by this rank) in each table of
/// `model` is `id / step` (step N: compact; step 1: the whole tables).
struct OwnedRows {
  Model* model = nullptr;
  uint32_t step = 1;

  uint64_t row(uint32_t id) const { return id / step; }
  float* input(uint32_t id) const { return model->input.row(row(id)); }
  float* output(uint32_t id) const { return model->output.row(row(id)); }
};

/// The compact tables of the rows `rank` owns out of a vocabulary of `rows` words (with the state
/// tables optimizer `kind` needs), initialised as the whole tables would give those rows.
/// Throws Error naming what runs out of memory, with `hint`.
Model allocate_owned_rows(uint64_t rows, uint32_t dim, OptimizerKind kind, RowOwners owners,
                          uint32_t rank, uint64_t seed, uint32_t threads, const std::string& hint);

}  // namespace pagedw2v::dist
