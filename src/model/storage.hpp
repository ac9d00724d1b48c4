#pragma once
/// @file storage.hpp
/// How the host tables store a value: fp32, or 16 bits (bfloat16 or IEEE half) for half the host
/// memory and half the bytes a paged row move carries. Training math is fp32 everywhere; these
/// conversions are the only place a value changes format. Each compiles for the host and the
/// device (the paging kernels use the same functions, so the CPU reference is the GPU's code).
///
/// Narrowing comes in two kinds: round to nearest, ties to even (reading user data into a
/// table, resume), and stochastic rounding (a trained row written back): the value rounds up
/// with probability equal to its distance from the value below, in units of the spacing there,
/// so the rounding is unbiased in mean and small updates are not lost (as FBGEMM's
/// table-batched embeddings do for their fp16 and bf16 weights). The random bits are a hash of
/// the value and its place (round_bits), so deterministic runs stay deterministic.
/// NaN stays NaN and ±Inf stays ±Inf; finite values past the largest finite one become ±Inf.

#include <cstdint>
#include <cstring>
#include <string>

#include "base/philox.hpp"  // PAGEDW2V_HD

namespace pagedw2v {

enum class Storage : uint32_t {
  kFp32 = 0,
  kBf16 = 1,  ///< bfloat16: fp32's exponent, 8 bits of significand
  kFp16 = 2,  ///< IEEE 754 binary16: 5 bits of exponent, 11 of significand
};

/// Bytes of one stored value.
PAGEDW2V_HD uint32_t storage_bytes(Storage s) { return s == Storage::kFp32 ? 4u : 2u; }

inline std::string to_string(Storage s) {
  switch (s) {
    case Storage::kFp32:
      return "fp32";
    case Storage::kBf16:
      return "bf16";
    case Storage::kFp16:
      return "fp16";
  }
  return "?";
}

/// "fp32", "bf16" or "fp16"; false for anything else.
inline bool parse_storage(const std::string& text, Storage* out) {
  for (Storage s : {Storage::kFp32, Storage::kBf16, Storage::kFp16}) {
    if (text == to_string(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

/// Where 16-bit storage is refused, each case with one message (storage_refusal).
enum class StorageRefusal {
  kCpuBackend,  ///< the CPU backend trains fp32 tables in place: 16 bits need --device cuda
  kOverRanks,   ///< ranks hold, exchange and train fp32 rows, on either device
};

/// The usage error of `--storage s` (16 bits) refused for `why`.
inline std::string storage_refusal(Storage s, StorageRefusal why) {
  if (why == StorageRefusal::kOverRanks) {
    return "--storage " + to_string(s) + " over ranks is not built: ranks hold fp32 rows";
  }
  return "--storage " + to_string(s) + " needs --device cuda (the CPU backend trains fp32 tables)";
}

namespace detail {

PAGEDW2V_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

PAGEDW2V_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// |f|'s bits truncated (toward zero) to binary16 for |f| ≥ 2^−14 (normal half range); ±Inf
/// past the largest finite half. `a` is |f|'s bits, finite.
PAGEDW2V_HD uint16_t half_normal_truncate(uint32_t a) {
  const int e = static_cast<int>(a >> 23) - 127;
  if (e > 15) return 0x7C00u;
  return static_cast<uint16_t>((static_cast<uint32_t>(e + 15) << 10) | ((a >> 13) & 0x3FFu));
}

}  // namespace detail

/// The fp32 value of a bfloat16 (exact).
PAGEDW2V_HD float bf16_to_float(uint16_t h) {
  return detail::bits_float(static_cast<uint32_t>(h) << 16);
}

/// f rounded to the nearest bfloat16, ties to even.
PAGEDW2V_HD uint16_t bf16_round_nearest(float f) {
  const uint32_t u = detail::float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/// f rounded stochastically to a bfloat16 with the low 16 bits of `r` (uniform random bits):
/// up with probability (f − down) / (up − down).
PAGEDW2V_HD uint16_t bf16_round_stochastic(float f, uint32_t r) {
  const uint32_t u = detail::float_bits(f);
  if ((u & 0x7FFFFFFFu) >= 0x7F800000u) return bf16_round_nearest(f);  // NaN, ±Inf
  // Adding the random bits to the magnitude's dropped bits carries into the kept ones with
  // exactly that probability; the sign bit is never reached (the largest finite magnitude
  // carries into +Inf's exponent at most).
  return static_cast<uint16_t>((u + (r & 0xFFFFu)) >> 16);
}

/// The fp32 value of an IEEE half (exact).
PAGEDW2V_HD float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0) {
    // Subnormal (or zero): m · 2^−24, exact in fp32.
    const float v = static_cast<float>(m) * (1.0f / 16777216.0f);
    return detail::bits_float(detail::float_bits(v) | sign);
  }
  if (e == 31) return detail::bits_float(sign | 0x7F800000u | (m << 13));
  return detail::bits_float(sign | ((e - 15 + 127) << 23) | (m << 13));
}

/// f rounded to the nearest IEEE half, ties to even.
PAGEDW2V_HD uint16_t fp16_round_nearest(float f) {
  const uint32_t u = detail::float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  if (a == 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (a < 0x38800000u) {
    // Below 2^−14: a multiple of 2^−24. y = |f| · 2^24 < 1024 and its parts are exact.
    const float y = detail::bits_float(a) * 16777216.0f;
    const uint32_t q = static_cast<uint32_t>(y);
    const float frac = y - static_cast<float>(q);
    const bool up = frac > 0.5f || (frac == 0.5f && (q & 1u) != 0);
    return static_cast<uint16_t>(sign | (q + (up ? 1u : 0u)));  // 1024 is 2^−14, the least normal
  }
  return static_cast<uint16_t>(sign | detail::half_normal_truncate(a + 0xFFFu + ((a >> 13) & 1u)));
}

/// f rounded stochastically to an IEEE half with the 32 random bits `r`: up with probability
/// (f − down) / (up − down) (resolved to 2^−24 of a spacing below 2^−14, 2^−13 above).
PAGEDW2V_HD uint16_t fp16_round_stochastic(float f, uint32_t r) {
  const uint32_t u = detail::float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return fp16_round_nearest(f);  // NaN, ±Inf
  if (a < 0x38800000u) {
    const float y = detail::bits_float(a) * 16777216.0f;
    const uint32_t q = static_cast<uint32_t>(y);
    const float frac = y - static_cast<float>(q);
    // frac in units of 2^−24, truncated; up when the 24 random bits carry past 2^24.
    const uint32_t frac24 = static_cast<uint32_t>(frac * 16777216.0f);
    const bool up = (r >> 8) + frac24 >= (1u << 24);
    return static_cast<uint16_t>(sign | (q + (up ? 1u : 0u)));
  }
  return static_cast<uint16_t>(sign | detail::half_normal_truncate(a + (r & 0x1FFFu)));
}

/// The fp32 value of a stored 16-bit value.
PAGEDW2V_HD float half_to_float(Storage s, uint16_t h) {
  return s == Storage::kBf16 ? bf16_to_float(h) : fp16_to_float(h);
}

/// f to the 16-bit storage `s`, round to nearest even.
PAGEDW2V_HD uint16_t half_round_nearest(Storage s, float f) {
  return s == Storage::kBf16 ? bf16_round_nearest(f) : fp16_round_nearest(f);
}

/// f to the 16-bit storage `s`, stochastic rounding with the random bits `r`.
PAGEDW2V_HD uint16_t half_round_stochastic(Storage s, float f, uint32_t r) {
  return s == Storage::kBf16 ? bf16_round_stochastic(f, r) : fp16_round_stochastic(f, r);
}

/// A 32-bit hash with full avalanche (lowbias32, C. Wellons): each input bit flips each output
/// bit with probability close to 1/2.
PAGEDW2V_HD uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

/// The 32 random bits that round value f of column `column` of table `table` (a move's table
/// index, kernels/paging.hpp) when it is written back to 16-bit storage, under key `seed`: a hash
/// of f's own bits and its place. So a value is rounded the same wherever and whenever it is
/// written back (the placement, the cache's state and a resume do not change it), and afresh
/// whenever training changes it; a hash, not a Philox draw, because the row moves compute one
/// per value moved.
PAGEDW2V_HD uint32_t round_bits(uint64_t seed, float f, uint32_t table, uint32_t column) {
  const uint32_t place = hash32((table << 24) ^ column ^ static_cast<uint32_t>(seed >> 32)) ^
                         static_cast<uint32_t>(seed);
  return hash32(detail::float_bits(f) ^ hash32(place));
}

/// f written back to 16-bit storage `s`: stochastic rounding with the bits of round_bits.
PAGEDW2V_HD uint16_t half_write_back(Storage s, float f, uint64_t seed, uint32_t table,
                                     uint32_t column) {
  return half_round_stochastic(s, f, round_bits(seed, f, table, column));
}

}  // namespace pagedw2v
