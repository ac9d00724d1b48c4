#pragma once
/// @file neighbors.hpp
/// Looking words up in loaded embeddings and ranking rows by cosine similarity. The helpers here
/// are shared by the evaluators (analogy.hpp, similarity.hpp), which fold case the way gensim's
/// `case_insensitive=True` does.

#include <cstdint>
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

/// Throws Error unless `words`, `vectors`, `rows` and `dim` agree with each other.
void check_embeddings(const LoadedEmbeddings& embeddings);

/// The `top` rows closest to `word` (exact spelling) by cosine, best first, without the word
/// itself and without rows holding a NaN or an infinity. Throws Error "word 'x' is not in the
/// vocabulary" when it is absent, and an Error when its own row is not finite.
std::vector<std::pair<std::string, float>> nearest(const LoadedEmbeddings& embeddings,
                                                   const std::string& word, uint32_t top);

}  // namespace pagedw2v
