#include "dist/owned_rows.hpp"

#include <algorithm>
#include <utility>

namespace pagedw2v::dist {

Model allocate_owned_rows(uint64_t rows, uint32_t dim, OptimizerKind kind, RowOwners owners,
                          uint32_t rank, uint64_t seed, uint32_t threads, const std::string& hint) {
  Model model = allocate_model(owners.owned(rows, rank), dim, kind, /*interleaved=*/false, hint);
  init_model(model, seed, threads, rank, owners.ranks);
  return model;
}

Model keep_owned_rows(Model&& whole, RowOwners owners, uint32_t rank) {
  Model all = std::move(whole);
  const uint64_t rows = all.input.rows(), n = owners.owned(rows, rank);
  const uint32_t dim = all.input.dim();
  auto compact = [&](const HostTable& from, const char* what) {
    HostTable to(n, dim, what, "lower --dim or --max-vocab", default_host_allocator(),
                 from.storage());
    for (uint64_t k = 0; k < n; ++k) {
      std::copy_n(static_cast<const char*>(from.raw_row(rank + k * owners.ranks)),
                  static_cast<size_t>(dim) * from.value_bytes(), static_cast<char*>(to.raw_row(k)));
    }
    return to;
  };
  Model mine;
  mine.input = compact(all.input, "owned input vectors");
  mine.output = compact(all.output, "owned output vectors");
  for (const HostTable& t : all.input_state) mine.input_state.push_back(compact(t, "owned state"));
  for (const HostTable& t : all.output_state) {
    mine.output_state.push_back(compact(t, "owned state"));
  }
  return mine;
}

}  // namespace pagedw2v::dist
