#include "dist/owned_rows.hpp"

namespace pagedw2v::dist {

Model allocate_owned_rows(uint64_t rows, uint32_t dim, OptimizerKind kind, RowOwners owners,
                          uint32_t rank, uint64_t seed, uint32_t threads, const std::string& hint) {
  Model model = allocate_model(owners.owned(rows, rank), dim, kind, /*interleaved=*/false, hint);
  init_model(model, seed, threads, rank, owners.ranks);
  return model;
}

}  // namespace pagedw2v::dist
