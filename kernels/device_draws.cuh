#pragma once
/// @file device_draws.cuh
/// Device-side forms of the CPU backend's random decisions, shared by the training kernel, the
/// pool kernel and the sampler probes so that the tests check the code that trains. Each is the
/// CPU expression (backend/cpu/cpu_backend.cpp, backend/cpu/sgns_cpu.hpp, negative_pool.hpp) on the
/// same counters and keys. The random bits come from cuRAND's Philox4x32-10 (curand_Philox4x32_10),
/// the CPU's from philox.hpp: one function (Salmon et al., SC'11), so the same bits, which
/// tests/test_cuda_sampler.cpp checks over many counters and keys. Device-only: include from .cu
/// files.

// cuRAND's Philox4x32-10 itself, the header curand_kernel.h includes for it: the whole of
// curand_kernel.h would add the other generators' tables (about 400 KB of device data) to every
// object that includes this file.
#include <curand_philox4x32_x.h>

#include <cstdint>

#include "base/philox.hpp"
#include "model/negative_pool.hpp"
#include "model/sampler.hpp"

namespace pagedw2v::detail {

/// cuRAND's Philox4x32-10 of counter `c` under `key`: philox4x32(c, key.k0, key.k1) of
/// philox.hpp, computed by cuRAND.
__device__ __forceinline__ Philox4 philox_block(const Philox4& c, PhiloxKey key) {
  const uint4 r =
      curand_Philox4x32_10(make_uint4(c.v[0], c.v[1], c.v[2], c.v[3]), make_uint2(key.k0, key.k1));
  return Philox4{{r.x, r.y, r.z, r.w}};
}

/// philox.hpp's draw() on the GPU: the same counter and key, cuRAND's generator.
__device__ __forceinline__ Philox4 device_draw(uint64_t seed, uint64_t pos, uint32_t epoch,
                                               DrawKind kind, uint32_t sub = 0) {
  return philox_block(draw_counter(pos, epoch, kind, sub), draw_key(seed));
}

/// Marks a negative that equals the centre word and is therefore skipped.
inline constexpr uint32_t kSkippedNegative = 0xFFFFFFFFu;

struct KeepDecision {
  bool keep;
  uint32_t shrink;  ///< dynamic-window reduction: the window is `window − shrink`
};

/// word2vec's subsampling of corpus token `pos` with keep probability `keep_p`, and the window
/// shrink drawn from the same Philox block.
__device__ __forceinline__ KeepDecision subsample_token(uint64_t seed, uint64_t pos, uint32_t epoch,
                                                        float keep_p, uint32_t window) {
  const Philox4 r = device_draw(seed, pos, epoch, DrawKind::kSubsample);
  KeepDecision d;
  d.keep = !(keep_p < 1.0f && to_unit_float(r.v[0]) >= keep_p);
  d.shrink = window > 0 ? r.v[1] % window : 0;
  return d;
}

/// The Philox block of negative call `call` of (centre at `pos`, context slot `slot`).
__device__ __forceinline__ Philox4 negative_draw(uint64_t seed, uint64_t pos, uint32_t epoch,
                                                 uint32_t slot, uint32_t call) {
  return device_draw(seed, pos, epoch, DrawKind::kNegative, (slot << 8) | call);
}

/// Entry `k` of the pool of super-batch `super_batch` in `epoch` (negative_pool.hpp's
/// pool_entry).
__device__ __forceinline__ uint32_t device_pool_entry(uint64_t seed, uint32_t epoch,
                                                      uint64_t super_batch, uint32_t k,
                                                      const NoiseColumn* noise, uint32_t columns) {
  const Philox4 r = device_draw(seed, pool_position(super_batch, k), epoch, DrawKind::kPool);
  return noise_draw(noise, columns, r.v[0], r.v[1]);
}

/// The two noise-table negatives of Philox block `r`; a negative equal to `centre` comes back as
/// kSkippedNegative.
__device__ __forceinline__ void noise_negatives(const Philox4& r, uint32_t centre,
                                                const NoiseColumn* noise, uint32_t columns,
                                                uint32_t* a, uint32_t* b) {
  const uint32_t x = noise_draw(noise, columns, r.v[0], r.v[1]);
  const uint32_t y = noise_draw(noise, columns, r.v[2], r.v[3]);
  *a = x == centre ? kSkippedNegative : x;
  *b = y == centre ? kSkippedNegative : y;
}

/// noise_negatives from the table of one part of the output ids (SgnsArgs::parts): the draws
/// are local rows j of ids part + j·parts; equality with `centre` compares ids, and what comes
/// back is the row, or kSkippedNegative.
__device__ __forceinline__ void part_noise_negatives(const Philox4& r, uint32_t centre,
                                                     const NoiseColumn* noise, uint32_t columns,
                                                     uint32_t parts, uint32_t part, uint32_t* a,
                                                     uint32_t* b) {
  const uint32_t x = noise_draw(noise, columns, r.v[0], r.v[1]);
  const uint32_t y = noise_draw(noise, columns, r.v[2], r.v[3]);
  *a = part + x * parts == centre ? kSkippedNegative : x;
  *b = part + y * parts == centre ? kSkippedNegative : y;
}

/// The two pool negatives of Philox block `r` (negative_pool.hpp): equality with `centre`
/// compares ids; what comes back is the table row of each negative (pool_rows[k], or the id
/// when pool_rows is null), or kSkippedNegative.
__device__ __forceinline__ void pool_negatives(const Philox4& r, uint32_t centre,
                                               const uint32_t* pool, uint32_t pool_size,
                                               const uint32_t* pool_rows, uint32_t* a,
                                               uint32_t* b) {
  const uint32_t k0 = pool_pick(r.v[0], pool_size), k1 = pool_pick(r.v[2], pool_size);
  const uint32_t x = pool[k0], y = pool[k1];
  *a = x == centre ? kSkippedNegative : (pool_rows != nullptr ? pool_rows[k0] : x);
  *b = y == centre ? kSkippedNegative : (pool_rows != nullptr ? pool_rows[k1] : y);
}

/// The two negatives of call `call` for (centre at `pos`, context slot `slot`); a negative equal
/// to `centre` comes back as kSkippedNegative.
__device__ __forceinline__ void negative_pair(uint64_t seed, uint64_t pos, uint32_t epoch,
                                              uint32_t slot, uint32_t call, uint32_t centre,
                                              const NoiseColumn* noise, uint32_t columns,
                                              uint32_t* a, uint32_t* b) {
  noise_negatives(negative_draw(seed, pos, epoch, slot, call), centre, noise, columns, a, b);
}

/// negative_pair with a negative pool: the rows of the two pool negatives of the call.
__device__ __forceinline__ void pool_negative_pair(uint64_t seed, uint64_t pos, uint32_t epoch,
                                                   uint32_t slot, uint32_t call, uint32_t centre,
                                                   const uint32_t* pool, uint32_t pool_size,
                                                   const uint32_t* pool_rows, uint32_t* a,
                                                   uint32_t* b) {
  pool_negatives(negative_draw(seed, pos, epoch, slot, call), centre, pool, pool_size, pool_rows, a,
                 b);
}

}  // namespace pagedw2v::detail
