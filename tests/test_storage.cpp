// The 16-bit storage conversions of storage.hpp, the reference the paging kernels are compared
// with: exhaustive round trips over every 16-bit pattern, round-to-nearest-even against an
// independent computation in double, and stochastic rounding's two neighbours and unbiased mean.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "model/storage.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

bool is_nan16(Storage s, uint16_t h) { return std::isnan(half_to_float(s, h)); }

class Storage16 : public ::testing::TestWithParam<Storage> {};

TEST_P(Storage16, EveryPatternRoundTripsExactly) {
  const Storage s = GetParam();
  uint32_t nans = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t x = static_cast<uint16_t>(h);
    const float f = half_to_float(s, x);
    if (std::isnan(f)) {
      ++nans;
      EXPECT_TRUE(is_nan16(s, half_round_nearest(s, f))) << h;
      EXPECT_TRUE(is_nan16(s, half_round_stochastic(s, f, 0xFFFFFFFFu))) << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000u) != 0) << h;
      continue;
    }
    ASSERT_EQ(half_round_nearest(s, f), x) << to_string(s) << " pattern " << h;
    // A representable value has nothing to round away, whatever the random bits.
    for (uint32_t r : {0u, 1u, 0x7FFFu, 0xFFFFu, 0x12345678u, 0xFFFFFFFFu}) {
      ASSERT_EQ(half_round_stochastic(s, f, r), x)
          << to_string(s) << " pattern " << h << " r " << r;
    }
  }
  // bf16: 2 · 127 NaN patterns (exponent all ones, significand ≠ 0); fp16: 2 · 1023.
  EXPECT_EQ(nans, s == Storage::kBf16 ? 254u : 2046u);
}

/// The two values of storage `s` around finite f (down ≤ f ≤ up, as patterns), by searching the
/// ordered positive patterns; independent of the conversions under test.
void neighbours(Storage s, float f, uint16_t* down, uint16_t* up) {
  const double a = std::fabs(static_cast<double>(f));
  const uint16_t sign = std::signbit(f) ? 0x8000u : 0;
  const uint16_t inf = s == Storage::kBf16 ? 0x7F80u : 0x7C00u;
  uint32_t lo = 0, hi = inf;  // half_to_float ascends over 0 … inf
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    if (static_cast<double>(half_to_float(s, static_cast<uint16_t>(mid))) <= a) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  if (static_cast<double>(half_to_float(s, static_cast<uint16_t>(lo))) == a) hi = lo;
  *down = static_cast<uint16_t>(sign | lo);
  *up = static_cast<uint16_t>(sign | hi);
}

/// Round to nearest even computed from the neighbours in double; past the largest finite value,
/// IEEE's rule: Inf once |f| reaches max + half a spacing.
uint16_t nearest_reference(Storage s, float f) {
  uint16_t down, up;
  neighbours(s, f, &down, &up);
  if (down == up) return down;
  const double a = std::fabs(static_cast<double>(f));
  const double d = std::fabs(static_cast<double>(half_to_float(s, down)));
  double u = std::fabs(static_cast<double>(half_to_float(s, up)));
  if (std::isinf(u))
    u = d + (d - std::fabs(static_cast<double>(half_to_float(s, static_cast<uint16_t>(down - 1)))));
  if (a - d < u - a) return down;
  if (a - d > u - a) return up;
  return (down & 1u) == 0 ? down : up;
}

/// Floats of every kind the tables hold and the edges: normal, tiny, subnormal, huge.
float random_float(std::mt19937_64& rng, Storage s) {
  switch (rng() % 4) {
    case 0:  // any finite pattern
      for (;;) {
        const float f = bits_float(static_cast<uint32_t>(rng()));
        if (std::isfinite(f)) return f;
      }
    case 1:  // the range word vectors and optimizer state live in
      return std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng),
                        -static_cast<int>(rng() % 30));
    case 2:  // near the storage's subnormals
      return std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng),
                        s == Storage::kBf16 ? -120 - static_cast<int>(rng() % 20)
                                            : -10 - static_cast<int>(rng() % 20));
    default:  // near the largest finite value
      return std::ldexp(std::uniform_real_distribution<float>(-2, 2)(rng),
                        s == Storage::kBf16 ? 126 : 15);
  }
}

TEST_P(Storage16, RoundNearestMatchesAReferenceInDouble) {
  const Storage s = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 400000; ++i) {
    const float f = random_float(rng, s);
    ASSERT_EQ(half_round_nearest(s, f), nearest_reference(s, f))
        << to_string(s) << " of " << f << " (bits " << std::hex << float_bits(f) << ")";
  }
  // Ties go to even: the midpoints between 1 and the next value up, and the one above.
  const float spacing = s == Storage::kBf16 ? 1.0f / 128 : 1.0f / 1024;
  EXPECT_EQ(half_to_float(s, half_round_nearest(s, 1.0f + spacing / 2)), 1.0f);
  EXPECT_EQ(half_to_float(s, half_round_nearest(s, 1.0f + 1.5f * spacing)), 1.0f + 2 * spacing);
  EXPECT_TRUE(std::isinf(half_to_float(s, half_round_nearest(s, 1e38f * 4))));
  EXPECT_TRUE(std::isinf(half_to_float(s, half_round_nearest(s, -INFINITY))));
  EXPECT_TRUE(std::isnan(half_to_float(s, half_round_nearest(s, NAN))));
  if (s == Storage::kFp16) {
    EXPECT_EQ(half_to_float(s, half_round_nearest(s, 65504.0f)), 65504.0f);
    EXPECT_EQ(half_to_float(s, half_round_nearest(s, 65519.0f)), 65504.0f);
    EXPECT_TRUE(std::isinf(half_to_float(s, half_round_nearest(s, 65520.0f))));
    EXPECT_EQ(half_to_float(s, half_round_nearest(s, std::ldexp(1.0f, -25))), 0.0f);  // tie to 0
    EXPECT_EQ(half_to_float(s, half_round_nearest(s, std::ldexp(1.5f, -25))),
              std::ldexp(1.0f, -24));
  }
}

TEST_P(Storage16, StochasticRoundingPicksANeighbour) {
  const Storage s = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 200000; ++i) {
    const float f = random_float(rng, s);
    uint16_t down, up;
    neighbours(s, f, &down, &up);
    const uint32_t r = static_cast<uint32_t>(rng());
    const uint16_t got = half_round_stochastic(s, f, r);
    // Past the largest finite value the value above is Inf.
    const uint16_t inf =
        static_cast<uint16_t>((down & 0x8000u) | (s == Storage::kBf16 ? 0x7F80u : 0x7C00u));
    ASSERT_TRUE(got == down || got == up || (up == inf && got == inf))
        << to_string(s) << " of " << f << ": got " << got << ", neighbours " << down << " " << up;
    // Random bits all zero never round up (within the finite range; fp16 has finite floats far
    // past its largest value, and those become Inf).
    const float largest = half_to_float(s, s == Storage::kBf16 ? 0x7F7Fu : 0x7BFFu);
    if (std::fabs(f) <= largest) {
      ASSERT_EQ(half_round_stochastic(s, f, 0), down) << f;
    }
  }
}

/// The mean of many stochastic roundings of f, each with fresh bits (a new key each).
double stochastic_mean(Storage s, float f, uint64_t seed, uint32_t n) {
  double sum = 0;
  for (uint32_t i = 0; i < n; ++i) {
    sum += half_to_float(s, half_round_stochastic(s, f, round_bits(seed + i, f, 0, 0)));
  }
  return sum / n;
}

TEST_P(Storage16, StochasticRoundingIsUnbiasedInMean) {
  const Storage s = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  constexpr uint32_t kDraws = 1u << 16;
  for (int i = 0; i < 60; ++i) {
    const float f = i < 50 ? random_float(rng, s) : std::ldexp(0.3f + 0.01f * i, -30 + i / 4);
    if (s == Storage::kFp16 && std::fabs(f) >= 65504.0f) continue;
    if (std::fabs(f) >= 3.38e38f) continue;
    uint16_t down, up;
    neighbours(s, f, &down, &up);
    const double d = half_to_float(s, down), u = half_to_float(s, up);
    if (down == up) {
      EXPECT_EQ(stochastic_mean(s, f, rng(), 64), static_cast<double>(f));
      continue;
    }
    // Each draw is a Bernoulli(p) choice between d and u: the mean's standard deviation is
    // (u − d)·sqrt(p(1 − p)/n) ≤ (u − d)/(2·sqrt(n)); 6 of those, plus the draw's resolution
    // (2^−24 of a spacing below fp16's normals, 2^−16 for bf16, 2^−13 for fp16 normals).
    const double spacing = std::fabs(u - d);
    const double resolution =
        s == Storage::kBf16 ? 1.0 / 65536 : (std::fabs(f) < 6.1e-5 ? 1.0 / 16777216 : 1.0 / 8192);
    const double tolerance = spacing * (6.0 / (2.0 * std::sqrt(double(kDraws))) + resolution);
    EXPECT_NEAR(stochastic_mean(s, f, rng(), kDraws), static_cast<double>(f), tolerance)
        << to_string(s) << " of " << f << " between " << d << " and " << u;
  }
  // A value a quarter of the way up rounds up a quarter of the time.
  const float spacing = s == Storage::kBf16 ? 1.0f / 128 : 1.0f / 1024;
  uint32_t ups = 0;
  for (uint32_t i = 0; i < kDraws; ++i) {
    ups += half_write_back(s, 1.0f + spacing / 4, seed + i, 1, 3) != half_round_nearest(s, 1.0f);
  }
  EXPECT_NEAR(ups / double(kDraws), 0.25, 0.01);
}

// The bits of a write-back are a function of the value and its place: over many values, as
// training makes them, the rounding errors still cancel in mean, and a value is never moved
// past a neighbour.
TEST_P(Storage16, WriteBackIsUnbiasedOverValues) {
  const Storage s = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(1.0f, 2.0f);
  const double spacing = s == Storage::kBf16 ? 1.0 / 128 : 1.0 / 1024;
  constexpr int kValues = 1 << 18;
  double error = 0, nearest_error = 0;
  uint32_t away = 0;
  for (int i = 0; i < kValues; ++i) {
    const float f = u(rng);
    const uint32_t column = static_cast<uint32_t>(rng() % 300),
                   table = static_cast<uint32_t>(rng() % 6);
    const uint16_t h = half_write_back(s, f, seed, table, column);
    ASSERT_EQ(h, half_write_back(s, f, seed, table, column)) << "the same value, the same bits";
    const double d = double(half_to_float(s, h)) - f;
    ASSERT_LT(std::fabs(d), spacing) << f;
    error += d;
    nearest_error += std::fabs(double(half_to_float(s, half_round_nearest(s, f))) - f);
    away += h != half_round_nearest(s, f);
  }
  // The mean error of independent roundings has standard deviation ≤ spacing / (2·sqrt(n)).
  EXPECT_NEAR(error / kValues, 0.0, 6 * spacing / (2 * std::sqrt(double(kValues))));
  // Values uniform in a spacing round away from the nearest a quarter of the time.
  EXPECT_NEAR(away / double(kValues), 0.25, 0.01);
  EXPECT_GT(nearest_error, 0.0);
}

// Updates far smaller than the spacing, applied step after step with the step in the key (as
// the optimizer steps round), add up on average; rounding to nearest would never move.
TEST_P(Storage16, SmallUpdatesAccumulateOverSteps) {
  const Storage s = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const float spacing = s == Storage::kBf16 ? 1.0f / 128 : 1.0f / 1024;
  const float delta = spacing / 64;
  constexpr int kSteps = 20000;
  constexpr int kColumns = 32;
  double mean = 0;
  for (uint32_t c = 0; c < kColumns; ++c) {
    float x = 1.0f, nearest = 1.0f;
    for (int step = 0; step < kSteps; ++step) {
      const uint64_t key = seed + (step + 1) * 0x9E3779B97F4A7C15ull;
      x = half_to_float(s, half_write_back(s, x + delta, key, 0, c));
      nearest = half_to_float(s, half_round_nearest(s, nearest + delta));
    }
    ASSERT_EQ(nearest, 1.0f);
    mean += x;
  }
  mean /= kColumns;
  const double want = 1.0 + double(delta) * kSteps;  // about 1 + 312 spacings
  EXPECT_NEAR(mean, want, 0.05 * (want - 1.0)) << to_string(s);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Storage16, ::testing::Values(Storage::kBf16, Storage::kFp16),
                         [](const auto& info) { return to_string(info.param); });

TEST(Storage, NamesParseBack) {
  for (Storage s : {Storage::kFp32, Storage::kBf16, Storage::kFp16}) {
    Storage back = Storage::kFp32;
    ASSERT_TRUE(parse_storage(to_string(s), &back));
    EXPECT_EQ(back, s);
  }
  Storage out = Storage::kBf16;
  EXPECT_FALSE(parse_storage("float16", &out));
  EXPECT_FALSE(parse_storage("", &out));
  EXPECT_EQ(out, Storage::kBf16);
  EXPECT_EQ(storage_bytes(Storage::kFp32), 4u);
  EXPECT_EQ(storage_bytes(Storage::kBf16), 2u);
  EXPECT_EQ(storage_bytes(Storage::kFp16), 2u);
}

TEST(Storage, RoundingBitsDependOnValueTableColumnAndKey) {
  const uint32_t a = round_bits(5, 0.25f, 2, 7);
  EXPECT_NE(a, round_bits(5ull << 32, 0.25f, 2, 7));
  EXPECT_NE(a, round_bits(5, std::nextafter(0.25f, 1.0f), 2, 7));
  EXPECT_NE(a, round_bits(5, 0.25f, 3, 7));
  EXPECT_NE(a, round_bits(5, 0.25f, 2, 8));
  EXPECT_NE(a, round_bits(6, 0.25f, 2, 7));
  EXPECT_EQ(a, round_bits(5, 0.25f, 2, 7));
}

}  // namespace
}  // namespace pagedw2v
