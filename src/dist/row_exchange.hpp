#pragma once
/// @file row_exchange.hpp
/// Moving rows between the ranks that own them and the ranks that train on them, for one span:
///   1. fetch: each rank asks every owner for the rows its share needs (ids by all-to-all), and
///      writes the owners' current values into its own tables at those rows — its working
///      copies — keeping the values as fetched;
///   2. (the rank trains its share on its tables, owned rows and working copies alike);
///   3. return_deltas: each rank sends back, for every row it fetched, what its training added
///      (its value now minus the value fetched), and each owner adds the deltas it receives in
///      rank order, so the result does not depend on timing.
/// Rows a rank owns are trained in place and never move. Built only with MPI.

#include <cstdint>
#include <vector>

#include "dist/mpi_comm.hpp"
#include "dist/needed_rows.hpp"
#include "dist/row_owners.hpp"
#include "model.hpp"

namespace pagedw2v::dist {

class RowExchange {
 public:
  RowExchange(MpiComm& comm, uint32_t dim);

  /// Step 1 for the rows of `need` that other ranks own.
  void fetch(Model& model, const NeededRows& need);
  /// Step 3: the deltas of the rows fetched by the last fetch() go back to their owners.
  void return_deltas(Model& model);

 private:
  /// The row of `model` a tagged id names (bit 31: the output table).
  static float* row_of(Model& model, uint32_t tagged);

  MpiComm& comm_;
  RowOwners owners_;
  uint32_t dim_;
  std::vector<std::vector<uint32_t>> asked_;  ///< per owner: the tagged ids this rank fetched
  std::vector<int> asked_counts_;             ///< floats fetched from each owner
  std::vector<uint32_t> served_;              ///< tagged ids others fetched from this rank
  std::vector<int> served_counts_;            ///< floats sent to each rank
  std::vector<float> fetched_;                ///< the values fetched, then the deltas
  std::vector<float> buffer_;                 ///< rows served, then deltas received
};

}  // namespace pagedw2v::dist
