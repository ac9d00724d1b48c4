#include "negative_pool.hpp"

namespace pagedw2v {

void draw_pool(uint64_t seed, uint32_t epoch, uint64_t super_batch, const AliasEntry* noise,
               uint32_t vocab, uint32_t n, uint32_t* out) {
  for (uint32_t k = 0; k < n; ++k) out[k] = pool_entry(seed, epoch, super_batch, k, noise, vocab);
}

std::vector<uint32_t> draw_pool(uint64_t seed, uint32_t epoch, uint64_t super_batch,
                                const AliasTable& noise, uint32_t n) {
  std::vector<uint32_t> pool(n);
  draw_pool(seed, epoch, super_batch, noise.entries().data(), noise.size(), n, pool.data());
  return pool;
}

}  // namespace pagedw2v
