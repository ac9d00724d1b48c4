#pragma once
/// @file philox.hpp
/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
/// counter-based generator cuRAND ships, and the counters and keys of every draw. The CPU
/// computes the generator here (philox4x32, draw); the CUDA kernels compute it with cuRAND's
/// curand_Philox4x32_10 on the same counters and keys (draw_counter, draw_key; see
/// kernels/device_draws.cuh), and tests/test_cuda_sampler.cpp checks that both give the same
/// bits. So both backends draw the same numbers for the same (seed, position): a draw depends on
/// where it is used, never on thread scheduling, which makes resume and CPU/GPU comparison
/// exact.

#include <cstdint>

#if defined(__CUDACC__)
#define PAGEDW2V_HD __host__ __device__ __forceinline__
#else
#define PAGEDW2V_HD inline
#endif

namespace pagedw2v {

struct Philox4 {
  uint32_t v[4];
};

namespace detail {
inline uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}
}  // namespace detail

/// Four independent 32-bit draws for counter `c` under key `k` (10 rounds). Host only: the
/// kernels use cuRAND's.
inline Philox4 philox4x32(Philox4 c, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, hi1;
    const uint32_t lo0 = detail::mulhilo(kM0, c.v[0], &hi0);
    const uint32_t lo1 = detail::mulhilo(kM1, c.v[2], &hi1);
    c = Philox4{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += kW0;
    k1 += kW1;
  }
  return c;
}

/// What a draw is for; part of the counter so that the streams never overlap.
enum class DrawKind : uint32_t {
  kSubsample = 0,  ///< v[0]: keep/discard of a token; v[1]: dynamic window shrink.
  kNegative = 1,   ///< negatives of one (centre, context-slot) pair, four per call.
  kInit = 2,       ///< initial input vectors, four values per call.
  kPool = 3,       ///< one entry of a super-batch's negative pool (negative_pool.hpp).
  /// The negatives one skip-gram centre shares with its whole window (SgnsKernel::
  /// kSharedNegatives), four per call.
  kWindowNegative = 4,
};

/// The key of every draw of a run: the two halves of its seed.
struct PhiloxKey {
  uint32_t k0, k1;
};

PAGEDW2V_HD PhiloxKey draw_key(uint64_t seed) {
  return PhiloxKey{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
}

/// The counter of the draw for token `pos` (global index in the encoded corpus) in `epoch`.
/// `sub` picks among several calls for the same token: for negatives, (context slot << 8) |
/// call index.
PAGEDW2V_HD Philox4 draw_counter(uint64_t pos, uint32_t epoch, DrawKind kind, uint32_t sub = 0) {
  return Philox4{{static_cast<uint32_t>(pos), static_cast<uint32_t>(pos >> 32), epoch,
                  (static_cast<uint32_t>(kind) << 28) ^ sub}};
}

/// The draw for token `pos` in `epoch` (draw_counter) under the run's key (draw_key). Host
/// only: the kernels' form is device_draw (kernels/device_draws.cuh).
inline Philox4 draw(uint64_t seed, uint64_t pos, uint32_t epoch, DrawKind kind, uint32_t sub = 0) {
  const PhiloxKey key = draw_key(seed);
  return philox4x32(draw_counter(pos, epoch, kind, sub), key.k0, key.k1);
}

/// Maps 32 random bits to a float in [0, 1) (24 bits of mantissa).
PAGEDW2V_HD float to_unit_float(uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

}  // namespace pagedw2v
