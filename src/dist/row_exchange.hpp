#pragma once
/// @file row_exchange.hpp
/// Moving rows between the ranks that own them and the ranks that train on them, for one span:
///   1. fetch: each rank asks every owner for the rows its share needs (ids by all-to-all), and
///      writes the owners' current values where its working set puts them (working_set.hpp:
///      copy rows), keeping the values as fetched;
///   2. (the rank trains its share: its own rows in place, and the fetched ones);
///   3. return_deltas: each rank sends back, for every row it fetched, what its training added
///      (its value now minus the value fetched), and each owner adds the deltas it receives in
///      rank order, so the result does not depend on timing.
/// Built only with MPI.

#include <cstdint>
#include <vector>

#include "dist/mpi_comm.hpp"
#include "dist/needed_rows.hpp"
#include "dist/owned_rows.hpp"
#include "dist/row_owners.hpp"
#include "dist/working_set.hpp"

namespace pagedw2v::dist {

class RowExchange {
 public:
  RowExchange(MpiComm& comm, uint32_t dim);

  /// Step 1 for the rows of `need` that other ranks own, whose slots `work` has assigned.
  void fetch(const OwnedRows& owned, const WorkingSet& work, const NeededRows& need);
  /// Step 3 for the rows of the last fetch().
  void return_deltas(const OwnedRows& owned, const WorkingSet& work);

 private:
  /// The owned row a tagged id names (bit 31: the output table), and where the span trains it.
  static float* owned_row(const OwnedRows& owned, uint32_t tagged);
  static float* work_row(const WorkingSet& work, uint32_t tagged);

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
