#pragma once
/// @file word_queries.hpp
/// Questions about given words of loaded embeddings, as gensim's KeyedVectors answers them:
/// `similarity(w1, w2)`, `doesnt_match(words)`, and the word `b − a + c` answers (word2vec's
/// word-analogy, fastText's analogies).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "eval/neighbors.hpp"
#include "io/embeddings.hpp"

namespace pagedw2v {

/// The cosine of rows `a` and `b` (gensim's `similarity`); 0 when either is all zero.
double row_cosine(const LoadedEmbeddings& embeddings, uint32_t a, uint32_t b);

/// gensim's `doesnt_match`: of `rows` (at least one), the index in `rows` of the one whose unit
/// vector has the least cosine with the mean of all their unit vectors; ties keep the first.
size_t doesnt_match(const LoadedEmbeddings& embeddings, const std::vector<uint32_t>& rows);

/// The `top` rows that best complete "a is to b as c is to ?" by `method` (b − a + c by 3CosAdd,
/// as word2vec's word-analogy and gensim's most_similar(positive=[b, c], negative=[a])), best
/// first, the three words' rows left out.
std::vector<std::pair<std::string, float>> analogy_answers(const NeighborIndex& index, uint32_t a,
                                                           uint32_t b, uint32_t c, uint32_t top,
                                                           AnalogyMethod method);

}  // namespace pagedw2v
