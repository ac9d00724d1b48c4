#pragma once
/// @file sampler.hpp
/// The two distributions word2vec draws from: the noise distribution for negatives (unigram^0.75,
/// here as a Walker/Vose alias table over runs of equal weight, O(1) per draw) and the
/// subsampling keep probabilities.

#include <cstdint>
#include <utility>
#include <vector>

#include "base/philox.hpp"
#include "vocab/count_list.hpp"

namespace pagedw2v {

/// One column of the noise table. The table is Walker/Vose's alias method over runs of
/// consecutive ids of equal weight: a vocabulary sorted by count (every counted one) has a run
/// per distinct count, a few thousand columns where a column per word took 8 bytes a word
/// (80 MB at 10 M words, on the GPU too).
struct NoiseColumn {
  float prob;       ///< probability of keeping this column's own run
  uint32_t alias;   ///< the column whose run is taken otherwise
  uint32_t first;   ///< the run's first id
  uint32_t length;  ///< its ids, all of the same weight
};

/// 32 bits mixed well (MurmurHash3's finalizer, a bijection).
PAGEDW2V_HD uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

/// Draws an id from the noise table `columns` (n of them) with two 32-bit random numbers:
/// r_col's high part picks a column (r_col · n / 2³²), r_coin keeps its run or takes the alias's,
/// and the id within the run comes from the bits of both that the choice left (the low half of
/// r_col · n mixed with r_coin): each id of a run of L ids has its share of the run's mass to
/// within L / 2³² of it.
PAGEDW2V_HD uint32_t noise_draw(const NoiseColumn* columns, uint32_t n, uint32_t r_col,
                                uint32_t r_coin) {
  const uint64_t x = static_cast<uint64_t>(r_col) * n;
  const NoiseColumn* c = columns + static_cast<uint32_t>(x >> 32);
  if (!(to_unit_float(r_coin) < c->prob)) c = columns + c->alias;
  const uint32_t h = mix32(static_cast<uint32_t>(x) ^ mix32(r_coin));
  return c->first + static_cast<uint32_t>((static_cast<uint64_t>(h) * c->length) >> 32);
}

/// The noise distribution for negatives: weight count^0.75 per word (word2vec's unigram table),
/// as an alias table over runs of equal weight (NoiseColumn).
class NoiseTable {
 public:
  NoiseTable() = default;
  /// Over `weights` (non-negative, at least one positive), one per id; runs of equal
  /// consecutive weights share a column.
  explicit NoiseTable(const std::vector<double>& weights);
  /// Over count^power of every word, without a weight per word.
  static NoiseTable of_counts(const CountList& counts, double power = 0.75);

  /// Ids the table draws from (the vocabulary).
  uint32_t words() const { return words_; }
  /// Its columns, a run each (and columns().size() of them).
  const std::vector<NoiseColumn>& columns() const { return columns_; }
  uint32_t column_count() const { return static_cast<uint32_t>(columns_.size()); }
  uint32_t sample(uint32_t r_col, uint32_t r_coin) const {
    return noise_draw(columns_.data(), column_count(), r_col, r_coin);
  }
  /// The share of draws that fall at or above id `first`.
  double share_from(uint64_t first) const;
  /// This distribution restricted to the ids `id % parts == part` (and scaled to sum to one),
  /// over their local indices: local index j is id part + j·parts. What a rank that holds one
  /// part of the output table draws its negatives from (kernels/sgns.hpp, SgnsArgs::parts).
  /// Throws Error when the part has no id or no weight.
  NoiseTable part(uint32_t parts, uint32_t part) const;

 private:
  /// Vose's method over runs [starts[k], starts[k + 1]) of the weights run_weight[k] (scaled in
  /// place).
  void build(const std::vector<uint32_t>& starts, std::vector<double> run_weight);

  std::vector<NoiseColumn> columns_;
  uint32_t words_ = 0;
};

/// count^power for every word: word2vec's noise distribution with power 0.75.
std::vector<double> unigram_weights(const std::vector<uint64_t>& counts, double power = 0.75);

/// word2vec's subsampling keep probabilities, held only up to the last word whose probability is
/// below 1: the vocabulary is sorted by count, so that is a few hundred frequent words, and
/// every other word keeps probability 1 (4 bytes a word less).
class KeepTable {
 public:
  KeepTable() = default;
  /// `below`: the probabilities of ids [0, below.size()); every id up to `words` after them is 1.
  KeepTable(std::vector<float> below, uint32_t words) : below_(std::move(below)), words_(words) {}
  /// Ids of the vocabulary.
  uint32_t words() const { return words_; }
  /// Ids with a stored probability: every id whose probability is below 1, and those before.
  uint32_t stored() const { return static_cast<uint32_t>(below_.size()); }
  /// The stored probabilities (stored() of them).
  const float* data() const { return below_.data(); }
  float operator[](uint32_t id) const { return id < below_.size() ? below_[id] : 1.0f; }

 private:
  std::vector<float> below_;
  uint32_t words_ = 0;
};

/// word2vec's subsampling: keep probability (sqrt(f/s) + 1)·s/f, f = count/total, clamped to 1.
/// `sample <= 0` keeps every word.
KeepTable keep_probabilities(const CountList& counts, uint64_t total, double sample);

}  // namespace pagedw2v
