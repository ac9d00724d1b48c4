#pragma once
/// @file similarity.hpp
/// Word-pair similarity (WordSim-353 and the like), with the semantics of gensim 4.2's
/// `KeyedVectors.evaluate_word_pairs(path, delimiter='\t', restrict_vocab=300000,
/// case_insensitive=True)`: the cosines of the pairs against the human scores.

#include <cstdint>
#include <string>
#include <vector>

#include "io/embeddings.hpp"

namespace pagedw2v {

/// Correlations between the model's cosines and the file's scores.
struct SimilarityReport {
  double spearman = 0.0;  ///< as scipy.stats.spearmanr: Pearson of average ranks; NaN if undefined
  double pearson = 0.0;   ///< of the raw values; NaN if undefined
  uint64_t pairs = 0;     ///< pairs evaluated
  uint64_t oov = 0;       ///< pairs skipped for a word outside the restricted vocabulary
  uint64_t nonfinite_rows = 0;  ///< rows left out for a NaN or an infinity (their words: oov)
  /// Skipped pairs in percent of all well-formed pairs.
  double oov_pct() const { return pairs + oov ? 100.0 * oov / (pairs + oov) : 0.0; }
};

/// Reads `word1<TAB>word2<TAB>score` lines, or the three fields separated by spaces (lines starting
/// with '#' are comments, other lines without three fields or with a score that is not a number are
/// ignored), looks both words up case-insensitively (ASCII; the first of several case variants
/// wins) among the first `restrict_vocab` rows (0 = all), skips and counts pairs with an unknown
/// word, and correlates the cosines of the rest with the scores. Throws Error when the file cannot
/// be read or no pair is left to evaluate.
SimilarityReport evaluate_similarity(const LoadedEmbeddings& embeddings,
                                     const std::string& pairs_path,
                                     uint64_t restrict_vocab = 300000);

/// Spearman's rank correlation as scipy.stats.spearmanr computes it: tied values get the mean of
/// their ranks, then the Pearson correlation of the ranks. Pairs with a NaN on either side are
/// left out (scipy's nan_policy='omit'). NaN when either side is constant or has fewer than two
/// values.
double spearman_correlation(const std::vector<double>& x, const std::vector<double>& y);

/// The Pearson correlation coefficient of two equally long series; NaN when undefined.
double pearson_correlation(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace pagedw2v
