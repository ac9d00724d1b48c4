#include "model/negative_pool.hpp"

#include "base/error.hpp"

namespace pagedw2v {

void draw_pool(uint64_t seed, uint32_t epoch, uint64_t super_batch, const NoiseColumn* noise,
               uint32_t columns, uint32_t n, uint32_t* out) {
  for (uint32_t k = 0; k < n; ++k) {
    out[k] = pool_entry(seed, epoch, super_batch, k, noise, columns);
  }
}

std::vector<uint32_t> draw_pool(uint64_t seed, uint32_t epoch, uint64_t super_batch,
                                const NoiseTable& noise, uint32_t n) {
  std::vector<uint32_t> pool(n);
  draw_pool(seed, epoch, super_batch, noise.columns().data(), noise.column_count(), n, pool.data());
  return pool;
}

void require_pool_for_paging(uint32_t negative_pool, const std::string& why,
                             const std::string& remedy) {
  if (negative_pool > 0) return;
  throw UsageError(why +
                   " needs --negative-pool N (negatives drawn from a pool shared by --pool-words "
                   "words, e.g. --negative-pool 1024)" +
                   remedy);
}

}  // namespace pagedw2v
