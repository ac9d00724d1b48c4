#pragma once
/// @file sampler.hpp
/// The two distributions word2vec draws from: the noise distribution for negatives (unigram^0.75,
/// here as a Walker/Vose alias table, O(1) per draw) and the subsampling keep probabilities.

#include <cstdint>
#include <vector>

#include "huge_pages.hpp"
#include "philox.hpp"

namespace pagedw2v {

/// One alias-table column, packed so a draw costs one 8-byte load (on the GPU too).
struct AliasEntry {
  float prob;      ///< probability of keeping the column's own id
  uint32_t alias;  ///< id taken otherwise
};

/// Draws an id from an alias table with two 32-bit random numbers.
PAGEDW2V_HD uint32_t alias_draw(const AliasEntry* table, uint32_t n, uint32_t r_col,
                                uint32_t r_coin) {
  const uint32_t col = static_cast<uint32_t>((static_cast<uint64_t>(r_col) * n) >> 32);
  const AliasEntry e = table[col];
  return to_unit_float(r_coin) < e.prob ? col : e.alias;
}

/// Walker/Vose alias table over non-negative weights (at least one positive).
class AliasTable {
 public:
  AliasTable() = default;
  /// Scales `weights` in place, its working copy (pass it moved: no second copy).
  explicit AliasTable(std::vector<double> weights);

  uint32_t size() const { return static_cast<uint32_t>(entries_.size()); }
  /// The columns; a large table's lie on pages of their own (HugePageAllocator::owns_its_pages),
  /// which the CUDA backend locks in place for its pool draws instead of copying them.
  const HugePageVector<AliasEntry>& entries() const { return entries_; }
  uint32_t sample(uint32_t r_col, uint32_t r_coin) const {
    return alias_draw(entries_.data(), size(), r_col, r_coin);
  }

 private:
  HugePageVector<AliasEntry> entries_;
};

/// count^power for every word: word2vec's noise distribution with power 0.75.
std::vector<double> unigram_weights(const std::vector<uint64_t>& counts, double power = 0.75);

/// word2vec's subsampling: keep probability (sqrt(f/s) + 1)·s/f, f = count/total, clamped to 1.
/// `sample <= 0` keeps every word.
std::vector<float> keep_probabilities(const std::vector<uint64_t>& counts, uint64_t total,
                                      double sample);

}  // namespace pagedw2v
