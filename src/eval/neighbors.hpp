#pragma once
/// @file neighbors.hpp
/// Looking words up in loaded embeddings and ranking rows by cosine similarity. The helpers here
/// are shared by the evaluators (analogy.hpp, similarity.hpp), which fold case the way gensim's
/// `case_insensitive=True` does.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/embeddings.hpp"

namespace pagedw2v {

/// Upper-cases the ASCII letters of `word`; every other byte is kept as it is.
std::string fold_case(std::string_view word);

/// Whether row `row` holds only finite values (no NaN, no infinity).
bool row_is_finite(const LoadedEmbeddings& embeddings, uint64_t row);

/// How many of the first `limit` rows hold a NaN or an infinity.
uint64_t nonfinite_rows(const LoadedEmbeddings& embeddings, uint64_t limit);

/// Maps the upper-cased form of each of the first `limit` rows to its row. When several rows
/// fold to the same key the first one (the most frequent) wins. Rows holding a NaN or an infinity
/// are left out (their words count as unknown).
std::unordered_map<std::string, uint32_t> case_folded_index(const LoadedEmbeddings& embeddings,
                                                            uint64_t limit);

/// The first `limit` rows scaled to unit length, row-major `limit` × dim. All-zero rows stay zero;
/// rows holding a NaN or an infinity become all NaN (no cosine with them ranks).
std::vector<float> normalized_rows(const LoadedEmbeddings& embeddings, uint64_t limit);

/// Throws Error unless `words`, `vectors`, `rows` and `dim` agree with each other and the
/// dimension is not 0.
void check_embeddings(const LoadedEmbeddings& embeddings);

/// The `top` rows closest to `word` (exact spelling) by cosine, best first, without the word
/// itself and without rows holding a NaN or an infinity. Throws Error "word 'x' is not in the
/// vocabulary" when it is absent, and an Error when its own row is not finite.
std::vector<std::pair<std::string, float>> nearest(const LoadedEmbeddings& embeddings,
                                                   const std::string& word, uint32_t top);

/// How a query with several words ranks the rows (gensim's two analogy scores).
enum class AnalogyMethod {
  /// `most_similar(positive, negative)`: cosine to the mean of the unit vectors, the negative
  /// ones subtracted (3CosAdd, Mikolov et al. 2013).
  kCosAdd,
  /// `most_similar_cosmul`: the product of (1 + cos) / 2 to the positive words divided by that
  /// to the negative ones plus 1e-6 (3CosMul, Levy and Goldberg 2014).
  kCosMul,
};

/// Neighbour queries over loaded embeddings: the rows are scaled to unit length once, so that
/// many queries (standard input, a batch of words) cost one matrix-vector product each.
class NeighborIndex {
 public:
  /// Keeps a reference to `embeddings`, which must outlive the index. Throws Error when they are
  /// inconsistent (check_embeddings) or a word has two rows.
  explicit NeighborIndex(const LoadedEmbeddings& embeddings);

  /// The row of `word`: its exact spelling first, then (with `ignore_case`) the first row, the
  /// most frequent, that equals it ignoring ASCII case. Empty when there is none.
  std::optional<uint32_t> find(const std::string& word, bool ignore_case) const;
  /// The word of row `row`.
  const std::string& word(uint32_t row) const { return embeddings_.words[row]; }
  /// Whether row `row` holds only finite values (rows that do not are never an answer).
  bool usable(uint32_t row) const { return row_is_finite(embeddings_, row); }

  /// The `top` rows that best answer positive − negative by `method`, best first, the query's
  /// own rows left out; ties keep row order. `positive` must not be empty.
  std::vector<std::pair<std::string, float>> most_similar(const std::vector<uint32_t>& positive,
                                                          const std::vector<uint32_t>& negative,
                                                          uint32_t top, AnalogyMethod method) const;

 private:
  const LoadedEmbeddings& embeddings_;
  std::vector<float> unit_;  ///< rows × dim, each row of unit length (or zero)
  std::unordered_map<std::string, uint32_t> exact_;
  std::unordered_map<std::string, uint32_t> folded_;
};

}  // namespace pagedw2v
