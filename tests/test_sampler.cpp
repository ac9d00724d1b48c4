#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "error.hpp"
#include "philox.hpp"
#include "sampler.hpp"

namespace pagedw2v {
namespace {

// Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
TEST(Philox, MatchesKnownAnswers) {
  Philox4 r = philox4x32(Philox4{{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
  r = philox4x32(Philox4{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu,
                 0xffffffffu);
  EXPECT_EQ(r.v[0], 0x408f276du);
  EXPECT_EQ(r.v[1], 0x41c83b0eu);
  EXPECT_EQ(r.v[2], 0xa20bc7c6u);
  EXPECT_EQ(r.v[3], 0x6d5451fdu);
  r = philox4x32(Philox4{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u,
                 0x299f31d0u);
  EXPECT_EQ(r.v[0], 0xd16cfe09u);
  EXPECT_EQ(r.v[1], 0x94fdccebu);
  EXPECT_EQ(r.v[2], 0x5001e420u);
  EXPECT_EQ(r.v[3], 0x24126ea1u);
}

TEST(Philox, DrawsDependOnEveryPartOfTheKey) {
  const Philox4 a = draw(1, 10, 0, DrawKind::kNegative, 3);
  const Philox4 same = draw(1, 10, 0, DrawKind::kNegative, 3);
  EXPECT_EQ(a.v[0], same.v[0]);
  EXPECT_NE(a.v[0], draw(2, 10, 0, DrawKind::kNegative, 3).v[0]);
  EXPECT_NE(a.v[0], draw(1, 11, 0, DrawKind::kNegative, 3).v[0]);
  EXPECT_NE(a.v[0], draw(1, 10, 1, DrawKind::kNegative, 3).v[0]);
  EXPECT_NE(a.v[0], draw(1, 10, 0, DrawKind::kSubsample, 3).v[0]);
  EXPECT_NE(a.v[0], draw(1, 10, 0, DrawKind::kNegative, 4).v[0]);
  EXPECT_NE(a.v[0], draw(1, 10ull << 32, 0, DrawKind::kNegative, 3).v[0]);
}

// The counter and key of a draw are the contract with the kernels, which feed the same words to
// cuRAND's generator (kernels/device_draws.cuh): position low and high word, epoch, kind << 28
// ^ sub; the seed's low and high word.
TEST(Philox, DrawCounterAndKeyLayout) {
  const Philox4 c = draw_counter((uint64_t{0x12345678} << 32) | 0x9abcdef0u, 77,
                                 DrawKind::kNegative, (5u << 8) | 2u);
  EXPECT_EQ(c.v[0], 0x9abcdef0u);
  EXPECT_EQ(c.v[1], 0x12345678u);
  EXPECT_EQ(c.v[2], 77u);
  EXPECT_EQ(c.v[3], 0x10000502u);
  EXPECT_EQ(draw_counter(3, 0, DrawKind::kPool).v[3], 0x30000000u);
  const PhiloxKey k = draw_key(0xfedcba9876543210ull);
  EXPECT_EQ(k.k0, 0x76543210u);
  EXPECT_EQ(k.k1, 0xfedcba98u);
  const Philox4 r = draw(0xfedcba9876543210ull, (uint64_t{0x12345678} << 32) | 0x9abcdef0u, 77,
                         DrawKind::kNegative, (5u << 8) | 2u);
  const Philox4 want = philox4x32(c, k.k0, k.k1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r.v[i], want.v[i]);
}

TEST(Philox, UnitFloatsAreUniform) {
  const int n = 200000, bins = 20;
  std::vector<int> hist(bins);
  for (int i = 0; i < n; ++i) {
    const float u = to_unit_float(draw(5, i, 0, DrawKind::kSubsample).v[0]);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ++hist[static_cast<int>(u * bins)];
  }
  double chi2 = 0;
  for (int h : hist) chi2 += (h - n / bins) * (h - n / bins) / double(n / bins);
  EXPECT_LT(chi2, 43.8);  // df 19, p = 0.001
}

/// Chi-square statistic of `draws` alias samples against `weights`.
double alias_chi2(const std::vector<double>& weights, int draws, uint64_t seed) {
  const AliasTable t(weights);
  std::vector<double> hist(weights.size());
  for (int i = 0; i < draws; ++i) {
    const Philox4 r = draw(seed, i, 0, DrawKind::kNegative);
    ++hist[t.sample(r.v[0], r.v[1])];
  }
  double sum = 0;
  for (double w : weights) sum += w;
  double chi2 = 0;
  for (size_t k = 0; k < weights.size(); ++k) {
    const double e = draws * weights[k] / sum;
    if (e == 0) {
      EXPECT_EQ(hist[k], 0) << "drew a zero-weight id " << k;
      continue;
    }
    chi2 += (hist[k] - e) * (hist[k] - e) / e;
  }
  return chi2;
}

TEST(AliasTable, SmallDistribution) {
  EXPECT_LT(alias_chi2({1, 2, 3, 4}, 400000, 11), 16.27);  // df 3, p = 0.001
}

TEST(AliasTable, ZeroWeightsAreNeverDrawn) {
  EXPECT_LT(alias_chi2({0, 5, 0, 1, 0, 3}, 300000, 12), 13.82);  // df 2
}

TEST(AliasTable, UnigramPowerNoiseOverAZipfVocabulary) {
  std::vector<uint64_t> counts(500);
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = 100000 / (i + 1) + 5;
  const std::vector<double> w = unigram_weights(counts, 0.75);
  EXPECT_NEAR(w[1], std::pow(double(counts[1]), 0.75), 1e-9);
  EXPECT_LT(alias_chi2(w, 2000000, 13), 620.0);  // df 499, p = 0.0003
}

TEST(AliasTable, RejectsEmptyOrZeroWeights) {
  EXPECT_THROW(AliasTable(std::vector<double>{}), Error);
  EXPECT_THROW(AliasTable(std::vector<double>{0, 0}), Error);
}

/// Vose's method as written with two growing stacks and a separate copy of the scaled weights:
/// the table AliasTable must equal entry for entry, whatever memory it builds it in.
std::vector<AliasEntry> two_stack_vose(const std::vector<double>& weights) {
  const size_t n = weights.size();
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<AliasEntry> entries(n);
  std::vector<double> scaled(n);
  std::vector<uint32_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    scaled[i] = weights[i] * static_cast<double>(n) / sum;
    (scaled[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const uint32_t s = small.back(), l = large.back();
    small.pop_back();
    entries[s] = {static_cast<float>(scaled[s]), l};
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  for (uint32_t i : large) entries[i] = {1.0f, i};
  for (uint32_t i : small) entries[i] = {1.0f, i};
  return entries;
}

TEST(AliasTable, EqualsTheTwoStackConstructionEntryForEntry) {
  std::mt19937_64 rng(11);
  for (const size_t n : {size_t{1}, size_t{2}, size_t{7}, size_t{1000}, size_t{100003}}) {
    std::vector<double> weights(n);
    for (size_t i = 0; i < n; ++i) {
      // Zipf-like counts to the 0.75, ties, and zeros.
      const uint64_t count = rng() % 5 == 0 ? 0 : 1 + (rng() % 1000000) / (1 + i % 97);
      weights[i] = std::pow(static_cast<double>(count), 0.75);
    }
    weights[0] = 1.0;
    const std::vector<AliasEntry> expected = two_stack_vose(weights);
    const AliasTable table(weights);
    ASSERT_EQ(table.size(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(table.entries()[i].prob, expected[i].prob) << n << " " << i;
      ASSERT_EQ(table.entries()[i].alias, expected[i].alias) << n << " " << i;
    }
  }
}

// A large table's columns lie on pages of their own (the CUDA backend locks them in place); a
// small one's need not.
TEST(AliasTable, LargeTablesLieOnPagesOfTheirOwn) {
  const AliasTable large(std::vector<double>(300000, 1.0));
  EXPECT_TRUE(HugePageAllocator<AliasEntry>::owns_its_pages(large.entries().capacity()));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large.entries().data()) %
                HugePageAllocator<AliasEntry>::kHugePage,
            0u);
  const AliasTable small(std::vector<double>(1000, 1.0));
  EXPECT_FALSE(HugePageAllocator<AliasEntry>::owns_its_pages(small.entries().capacity()));
}

TEST(Subsampling, KeepProbabilityIsWord2vecFormula) {
  const std::vector<uint64_t> counts = {1000000, 10000, 100, 1};
  const uint64_t total = 2000000;
  const double s = 1e-3;
  const std::vector<float> keep = keep_probabilities(counts, total, s);
  for (size_t i = 0; i < counts.size(); ++i) {
    const double f = double(counts[i]) / total;
    const double want = std::min(1.0, (std::sqrt(f / s) + 1) * s / f);
    EXPECT_NEAR(keep[i], want, 1e-6) << i;
  }
  EXPECT_LT(keep[0], 0.1f);
  EXPECT_EQ(keep[3], 1.0f);
  for (float k : keep_probabilities(counts, total, 0.0)) EXPECT_EQ(k, 1.0f);
}

TEST(Subsampling, KeptFractionMatchesProbability) {
  // The trainer keeps token `pos` when to_unit_float(draw(seed, pos, epoch, kSubsample).v[0]) < p.
  for (float p : {0.05f, 0.3f, 0.77f}) {
    const int n = 200000;
    int kept = 0;
    for (int pos = 0; pos < n; ++pos) {
      kept += to_unit_float(draw(3, pos, 2, DrawKind::kSubsample).v[0]) < p;
    }
    const double sd = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(kept, n * p, 4.5 * sd) << p;
  }
}

}  // namespace
}  // namespace pagedw2v
