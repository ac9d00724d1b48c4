#pragma once
/// @file negative_pool.hpp
/// The negative pool (TrainParams::negative_pool), one definition for the CPU backend and the
/// CUDA kernels (the functions marked PAGEDW2V_HD compile for both; the kernels' forms of the
/// draws are in kernels/device_draws.cuh, on the same counters).
///
/// Semantics, for a run with seed `seed`, pool size N > 0 and `pool_blocks` blocks per pool
/// period (TrainParams::pool_blocks; "super-batch" below means that period):
/// - Block b of an epoch (training_set.hpp's work blocks, counted from the start of the epoch)
///   draws its negatives from the pool of period b / pool_blocks.
/// - Entry k (0 ≤ k < N) of the pool of super-batch s in epoch e is the noise-table draw
///   (sampler.hpp's noise_draw) from the noise table with r = draw(seed, (s << 32) | k, e,
///   DrawKind::kPool): column from r.v[0], coin from r.v[1]. Entries are independent draws from
///   the noise distribution, and the counters of different entries, super-batches (s < 2³²,
///   counted within the epoch) and epochs never coincide. A pool may hold an id more than once.
/// - An example's negatives use the Philox block of the per-example draws (DrawKind::kNegative,
///   sub = (context slot << 8) | call, keyed by the centre's corpus position and the epoch) and
///   replace each of its two noise-table draws by a pick: negative 2·call is
///   pool[(r.v[0] · N) >> 32], negative 2·call + 1 is pool[(r.v[2] · N) >> 32]. As without a
///   pool, a negative whose id equals the centre's id is skipped, and an odd `negative` drops
///   the last call's second pick.
/// So each negative is uniform over the pool's entries, and its marginal distribution is the
/// noise distribution; a super-batch's negatives all lie in its pool, which is what lets paged
/// tables gather a super-batch's rows before it trains.

#include <cstdint>
#include <string>
#include <vector>

#include "base/philox.hpp"
#include "model/sampler.hpp"

namespace pagedw2v {

/// The super-batch of block `block` (counted from the start of its epoch).
PAGEDW2V_HD uint64_t super_batch_of(uint64_t block, uint32_t batch_blocks) {
  return block / (batch_blocks > 0 ? batch_blocks : 1u);
}

/// The draw position of entry `k` of the pool of super-batch `super_batch` (DrawKind::kPool).
PAGEDW2V_HD uint64_t pool_position(uint64_t super_batch, uint32_t k) {
  return (super_batch << 32) | k;
}

/// Entry `k` of the pool of super-batch `super_batch` in `epoch`: an id drawn from the noise
/// table `noise` of `columns` columns.
inline uint32_t pool_entry(uint64_t seed, uint32_t epoch, uint64_t super_batch, uint32_t k,
                           const NoiseColumn* noise, uint32_t columns) {
  const Philox4 r = draw(seed, pool_position(super_batch, k), epoch, DrawKind::kPool);
  return noise_draw(noise, columns, r.v[0], r.v[1]);
}

/// The pool index that 32 random bits pick among `pool_size` entries (uniform, as noise_draw
/// picks a column).
PAGEDW2V_HD uint32_t pool_pick(uint32_t r, uint32_t pool_size) {
  return static_cast<uint32_t>((static_cast<uint64_t>(r) * pool_size) >> 32);
}

/// The two pool indices of negative call `call` of (centre at corpus position `pos`, context
/// slot `slot`) in `epoch`: the picks that stand for negatives 2·call and 2·call + 1.
inline void pool_pick_pair(uint64_t seed, uint64_t pos, uint32_t epoch, uint32_t slot,
                           uint32_t call, uint32_t pool_size, uint32_t* k0, uint32_t* k1) {
  const Philox4 r = draw(seed, pos, epoch, DrawKind::kNegative, (slot << 8) | call);
  *k0 = pool_pick(r.v[0], pool_size);
  *k1 = pool_pick(r.v[2], pool_size);
}

/// Writes the pool of super-batch `super_batch` in `epoch` (`n` entries) to out[0..n).
void draw_pool(uint64_t seed, uint32_t epoch, uint64_t super_batch, const NoiseColumn* noise,
               uint32_t columns, uint32_t n, uint32_t* out);

/// The same pool as a vector.
std::vector<uint32_t> draw_pool(uint64_t seed, uint32_t epoch, uint64_t super_batch,
                                const NoiseTable& noise, uint32_t n);

/// The rule that paged tables need a negative pool (a piece's rows, negatives included, are
/// collected before it trains: kernels/paging.hpp), in one place for every path that pages:
/// throws UsageError, `why` (what pages the tables) first and `remedy` last, when
/// `negative_pool` is 0.
void require_pool_for_paging(uint32_t negative_pool, const std::string& why,
                             const std::string& remedy = "");

}  // namespace pagedw2v
