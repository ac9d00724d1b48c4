#include "eval/word_queries.hpp"

#include <cmath>
#include <limits>

#include "base/error.hpp"

namespace pagedw2v {
namespace {

/// Row `r` scaled to unit length, in double (all zero stays zero).
std::vector<double> unit_row(const LoadedEmbeddings& embeddings, uint32_t r) {
  const float* v = embeddings.row(r);
  double norm = 0;
  for (uint32_t k = 0; k < embeddings.dim; ++k) norm += static_cast<double>(v[k]) * v[k];
  norm = std::sqrt(norm);
  std::vector<double> unit(embeddings.dim, 0.0);
  if (norm > 0) {
    for (uint32_t k = 0; k < embeddings.dim; ++k) unit[k] = v[k] / norm;
  }
  return unit;
}

double dot(const std::vector<double>& x, const std::vector<double>& y) {
  double sum = 0;
  for (size_t k = 0; k < x.size(); ++k) sum += x[k] * y[k];
  return sum;
}

}  // namespace

double row_cosine(const LoadedEmbeddings& embeddings, uint32_t a, uint32_t b) {
  return dot(unit_row(embeddings, a), unit_row(embeddings, b));
}

size_t doesnt_match(const LoadedEmbeddings& embeddings, const std::vector<uint32_t>& rows) {
  if (rows.empty()) throw Error("doesnt-match needs at least one word");
  std::vector<std::vector<double>> units;
  std::vector<double> mean(embeddings.dim, 0.0);
  for (const uint32_t r : rows) {
    units.push_back(unit_row(embeddings, r));
    for (uint32_t k = 0; k < embeddings.dim; ++k) mean[k] += units.back()[k] / rows.size();
  }
  // gensim takes the cosine with the mean made unit; its length does not change the order.
  size_t worst = 0;
  double least = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < units.size(); ++i) {
    const double d = dot(units[i], mean);
    if (d < least) {
      least = d;
      worst = i;
    }
  }
  return worst;
}

std::vector<std::pair<std::string, float>> analogy_answers(const NeighborIndex& index, uint32_t a,
                                                           uint32_t b, uint32_t c, uint32_t top,
                                                           AnalogyMethod method) {
  return index.most_similar({b, c}, {a}, top, method);
}

}  // namespace pagedw2v
