#pragma once
/// @file owner_steps.hpp
/// Optimizers with state (Adam, Adagrad, …) over ranks: the optimizer state of a row lives with
/// its owner, and so does its update. For each block of its share a rank computes the block's
/// gradients against the tables as fetched for the span (the CPU backend's batched pass, which
/// only reads), and sends each row's gradient to the row's owner; each owner then applies the
/// steps of all the span's blocks, in block order, to its rows and their state, with the step
/// number and learning rate one process gives that block. A block's gradients are thus computed
/// up to one span late (the blocks before it in the span have not stepped yet); with one rank the
/// result is one process's. The gradients are summed per row touched, in a small map, not in
/// tables of the vocabulary's size. Built only with MPI.

#include <cstdint>
#include <vector>

#include "backend/backend.hpp"
#include "dist/mpi_comm.hpp"
#include "dist/owned_rows.hpp"
#include "dist/row_owners.hpp"
#include "dist/working_set.hpp"

namespace pagedw2v::dist {

class OwnerSteps {
 public:
  OwnerSteps(MpiComm& comm, uint32_t dim);

  /// Gradients of the blocks `mine` of `epoch` against the rows `work` lays out (fetched), sent
  /// to their owners, then the owners' steps of every block of the span on `owned` (rows and
  /// state). Returns this rank's statistics.
  SpanStats train(const TrainData& data, const OwnedRows& owned, const WorkingSet& work,
                  uint32_t epoch, BlockRange mine);

 private:
  MpiComm& comm_;
  RowOwners owners_;
  uint32_t dim_;
};

}  // namespace pagedw2v::dist
