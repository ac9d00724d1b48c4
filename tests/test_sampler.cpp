#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "base/philox.hpp"
#include "model/sampler.hpp"

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

/// Chi-square statistic of `draws` samples of the noise table over `weights` against them.
double noise_chi2(const std::vector<double>& weights, int draws, uint64_t seed) {
  const NoiseTable t(weights);
  EXPECT_EQ(t.words(), weights.size());
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

TEST(NoiseTable, SmallDistribution) {
  EXPECT_LT(noise_chi2({1, 2, 3, 4}, 400000, 11), 16.27);  // df 3, p = 0.001
}

TEST(NoiseTable, ZeroWeightsAreNeverDrawn) {
  EXPECT_LT(noise_chi2({0, 5, 0, 1, 0, 3}, 300000, 12), 13.82);           // df 2
  EXPECT_LT(noise_chi2({0, 0, 5, 5, 0, 0, 0, 1, 1}, 300000, 12), 18.47);  // df 4
}

// Counts with long runs of ties, as a vocabulary sorted by count has: every id of a run is drawn
// as often as its weight says, not only the run as a whole.
TEST(NoiseTable, UnigramPowerNoiseOverAZipfVocabulary) {
  std::vector<uint64_t> counts(500);
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = 100000 / (i + 1) + 5;
  const std::vector<double> w = unigram_weights(counts, 0.75);
  EXPECT_NEAR(w[1], std::pow(double(counts[1]), 0.75), 1e-9);
  uint32_t distinct = 1;
  for (size_t i = 1; i < counts.size(); ++i) distinct += counts[i] != counts[i - 1];
  EXPECT_LT(distinct, counts.size());
  EXPECT_EQ(NoiseTable(w).column_count(), distinct);
  EXPECT_LT(noise_chi2(w, 2000000, 13), 620.0);  // df 499, p = 0.0003
}

TEST(NoiseTable, RejectsEmptyOrZeroWeights) {
  EXPECT_THROW(NoiseTable(std::vector<double>{}), Error);
  EXPECT_THROW(NoiseTable(std::vector<double>{0, 0}), Error);
  EXPECT_THROW(NoiseTable::of_counts({}), Error);
}

/// Vose's method as written with two growing stacks and a separate copy of the scaled weights:
/// {prob, alias} of every column, which NoiseTable's columns must equal.
std::vector<std::pair<float, uint32_t>> two_stack_vose(const std::vector<double>& weights) {
  const size_t n = weights.size();
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<std::pair<float, uint32_t>> entries(n);
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

// The columns are the runs of equal consecutive weights, and their alias table is Vose's over
// the runs' total weights.
TEST(NoiseTable, ColumnsAreVoseOverTheRuns) {
  std::mt19937_64 rng(11);
  for (const size_t n : {size_t{1}, size_t{2}, size_t{7}, size_t{1000}, size_t{100003}}) {
    std::vector<double> weights(n);
    for (size_t i = 0; i < n; ++i) {
      // Zipf-like counts to the 0.75, runs of ties, and zeros.
      const uint64_t count = rng() % 5 == 0 ? 0 : 1 + (rng() % 1000000) / (1 + i % 97);
      weights[i] =
          (i > 0 && rng() % 3 == 0) ? weights[i - 1] : std::pow(static_cast<double>(count), 0.75);
    }
    weights[0] = 1.0;
    std::vector<double> run_weight;
    std::vector<uint32_t> first;
    for (size_t i = 0; i < n; ++i) {
      if (i == 0 || weights[i] != weights[i - 1]) {
        first.push_back(static_cast<uint32_t>(i));
        run_weight.push_back(0.0);
      }
      run_weight.back() += weights[i];
    }
    first.push_back(static_cast<uint32_t>(n));
    const auto expected = two_stack_vose(run_weight);
    const NoiseTable table(weights);
    ASSERT_EQ(table.words(), n);
    ASSERT_EQ(table.column_count(), run_weight.size());
    for (size_t k = 0; k < run_weight.size(); ++k) {
      const NoiseColumn& c = table.columns()[k];
      ASSERT_EQ(c.prob, expected[k].first) << n << " " << k;
      ASSERT_EQ(c.alias, expected[k].second) << n << " " << k;
      ASSERT_EQ(c.first, first[k]) << n << " " << k;
      ASSERT_EQ(c.length, first[k + 1] - first[k]) << n << " " << k;
    }
  }
}

// A vocabulary sorted by count: a column per distinct count, each the run of its words, and the
// same distribution as a table built from a weight per word.
TEST(NoiseTable, OfCountsHasAColumnPerDistinctCount) {
  const std::vector<uint64_t> counts = {90, 40, 40, 40, 7, 5, 5, 5, 5, 5, 5, 1, 1, 1, 1};
  const NoiseTable t = NoiseTable::of_counts(counts);
  EXPECT_EQ(t.words(), counts.size());
  ASSERT_EQ(t.column_count(), 5u);
  const uint32_t firsts[] = {0, 1, 4, 5, 11}, lengths[] = {1, 3, 1, 6, 4};
  for (uint32_t k = 0; k < 5; ++k) {
    EXPECT_EQ(t.columns()[k].first, firsts[k]);
    EXPECT_EQ(t.columns()[k].length, lengths[k]);
  }
  std::vector<double> hist(counts.size());
  const int draws = 1000000;
  for (int i = 0; i < draws; ++i) {
    const Philox4 r = draw(21, i, 0, DrawKind::kPool);
    ++hist[t.sample(r.v[0], r.v[1])];
  }
  const std::vector<double> w = unigram_weights(counts);
  const double sum = std::accumulate(w.begin(), w.end(), 0.0);
  double chi2 = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const double e = draws * w[k] / sum;
    chi2 += (hist[k] - e) * (hist[k] - e) / e;
  }
  EXPECT_LT(chi2, 36.12);  // df 14, p = 0.001
}

// The id within a long run comes from bits the column's choice left: a run of millions of words
// is drawn evenly over its whole length, not in a few places.
TEST(NoiseTable, LongRunsAreDrawnEvenly) {
  std::vector<uint64_t> counts(3000001, 1);
  counts[0] = 1000000;
  const NoiseTable t = NoiseTable::of_counts(counts);
  ASSERT_EQ(t.column_count(), 2u);
  const int buckets = 100, draws = 2000000;
  std::vector<double> hist(buckets);
  std::vector<uint8_t> seen(counts.size());
  int in_run = 0;
  for (int i = 0; i < draws; ++i) {
    const Philox4 r = draw(5, i, 1, DrawKind::kNegative);
    const uint32_t id = t.sample(r.v[0], r.v[1]);
    ASSERT_LT(id, counts.size());
    if (id == 0) continue;
    ++in_run;
    seen[id] = 1;
    ++hist[(uint64_t{id} - 1) * buckets / 3000000];
  }
  double chi2 = 0;
  for (double h : hist)
    chi2 += (h - in_run / double(buckets)) * (h - in_run / double(buckets)) /
            (in_run / double(buckets));
  EXPECT_LT(chi2, 148.2);  // df 99, p = 0.001
  // About 3 M · (1 − e^(−draws/3 M)) distinct ids of the run drawn.
  const double expect_distinct = 3e6 * (1 - std::exp(-double(in_run) / 3e6));
  EXPECT_NEAR(std::accumulate(seen.begin(), seen.end(), 0.0), expect_distinct,
              0.01 * expect_distinct);
}

// The share of draws at or above an id, from the columns, equals the weights' share (to the
// precision of the columns' float probabilities).
TEST(NoiseTable, ShareFromIsTheWeightsShare) {
  std::vector<uint64_t> counts;
  for (uint64_t c = 5000; c >= 1; c = c * 9 / 10) {
    for (int k = 0; k < 1 + int(5000 / c); ++k) counts.push_back(c);
    if (c < 10) break;
  }
  const NoiseTable t = NoiseTable::of_counts(counts);
  const std::vector<double> w = unigram_weights(counts);
  const double sum = std::accumulate(w.begin(), w.end(), 0.0);
  for (uint64_t first :
       {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{100}, uint64_t{counts.size() / 2},
        uint64_t{counts.size() - 1}, uint64_t{counts.size()}}) {
    const double want = std::accumulate(w.begin() + first, w.end(), 0.0) / sum;
    EXPECT_NEAR(t.share_from(first), want, 1e-6) << first;
  }
}

/// The probability of every id of `t`, from its columns (a column carries 1/n of the mass: prob
/// to its own run, the rest to its alias's, shared evenly by a run's ids).
std::vector<double> id_probabilities(const NoiseTable& t) {
  const auto& cols = t.columns();
  std::vector<double> p(t.words(), 0.0);
  const double n = double(cols.size());
  for (const NoiseColumn& c : cols) {
    const double keep = std::min(1.0, std::max(0.0, double(c.prob)));
    const NoiseColumn& a = cols[c.alias];
    for (uint32_t k = 0; k < c.length; ++k) p[c.first + k] += keep / n / c.length;
    for (uint32_t k = 0; k < a.length; ++k) p[a.first + k] += (1.0 - keep) / n / a.length;
  }
  return p;
}

// A part of the noise table (the ids id % parts == part, at local index id / parts) draws each
// of its ids with the whole table's weight renormalised over the part, runs of ties included,
// and every part's draws are its own ids.
TEST(NoiseTable, PartIsTheRestrictedDistribution) {
  std::vector<uint64_t> counts;
  for (uint64_t c = 3000; c >= 1; c = c * 8 / 10) {
    for (int k = 0; k < 1 + int(3000 / c); ++k) counts.push_back(c);
    if (c < 5) break;
  }
  const NoiseTable whole = NoiseTable::of_counts(counts);
  const std::vector<double> w = unigram_weights(counts);
  for (uint32_t parts : {1u, 2u, 3u, 7u}) {
    for (uint32_t part = 0; part < parts; ++part) {
      const NoiseTable t = whole.part(parts, part);
      const uint32_t local = static_cast<uint32_t>((counts.size() - part + parts - 1) / parts);
      ASSERT_EQ(t.words(), local) << parts << " " << part;
      double sum = 0;
      for (uint32_t j = 0; j < local; ++j) sum += w[part + uint64_t{j} * parts];
      const std::vector<double> got = id_probabilities(t);
      for (uint32_t j = 0; j < local; ++j) {
        ASSERT_NEAR(got[j], w[part + uint64_t{j} * parts] / sum, 2e-6) << parts << " " << j;
      }
      EXPECT_LE(t.column_count(), whole.column_count());
      for (int i = 0; i < 20000; ++i) {
        const Philox4 r = draw(5, i, part, DrawKind::kNegative);
        ASSERT_LT(t.sample(r.v[0], r.v[1]), local);
      }
    }
  }
  EXPECT_THROW(whole.part(2, 2), Error);
  EXPECT_THROW(NoiseTable(std::vector<double>{1.0, 2.0}).part(3, 2), Error);
  EXPECT_THROW(NoiseTable(std::vector<double>{1.0, 0.0}).part(2, 1), Error);
}

TEST(Subsampling, KeepProbabilityIsWord2vecFormula) {
  const std::vector<uint64_t> counts = {1000000, 10000, 100, 1};
  const uint64_t total = 2000000;
  const double s = 1e-3;
  const KeepTable keep = keep_probabilities(counts, total, s);
  EXPECT_EQ(keep.words(), counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    const double f = double(counts[i]) / total;
    const double want = std::min(1.0, (std::sqrt(f / s) + 1) * s / f);
    EXPECT_NEAR(keep[i], want, 1e-6) << i;
  }
  EXPECT_LT(keep[0], 0.1f);
  EXPECT_EQ(keep[3], 1.0f);
  const KeepTable all = keep_probabilities(counts, total, 0.0);
  EXPECT_EQ(all.stored(), 0u);
  for (uint32_t i = 0; i < counts.size(); ++i) EXPECT_EQ(all[i], 1.0f);
}

// Only the words up to the last one whose probability is below 1 are stored; every word after
// it keeps probability 1, as the formula gives it.
TEST(Subsampling, KeepTableStoresOnlyTheFrequentWords) {
  std::vector<uint64_t> counts(100000);
  uint64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) total += counts[i] = 1000000 / (i + 1) + 1;
  const double s = 1e-3;
  const KeepTable keep = keep_probabilities(counts, total, s);
  EXPECT_EQ(keep.words(), counts.size());
  EXPECT_GT(keep.stored(), 0u);
  EXPECT_LT(keep.stored(), 1000u);
  EXPECT_LT(keep[keep.stored() - 1], 1.0f);
  for (size_t i = 0; i < counts.size(); ++i) {
    const double f = double(counts[i]) / double(total);
    const double want = std::min(1.0, (std::sqrt(f / s) + 1) * s / f);
    const float got = keep[static_cast<uint32_t>(i)];
    if (i >= keep.stored()) {
      ASSERT_EQ(got, 1.0f) << i;
      ASSERT_GT(want, 1.0 - 1e-6) << i;
    } else {
      ASSERT_NEAR(got, want, 1e-6) << i;
    }
  }
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
