#include "eval/neighbors.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.hpp"

namespace pagedw2v {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace

std::string fold_case(std::string_view word) {
  std::string out(word);
  for (char& ch : out) {
    if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
  }
  return out;
}

bool row_is_finite(const LoadedEmbeddings& embeddings, uint64_t row) {
  const float* v = embeddings.vectors.data() + row * embeddings.dim;
  for (uint32_t k = 0; k < embeddings.dim; ++k) {
    if (!std::isfinite(v[k])) return false;
  }
  return true;
}

uint64_t nonfinite_rows(const LoadedEmbeddings& embeddings, uint64_t limit) {
  limit = std::min<uint64_t>(limit, embeddings.rows);
  uint64_t n = 0;
  for (uint64_t row = 0; row < limit; ++row) n += row_is_finite(embeddings, row) ? 0 : 1;
  return n;
}

std::unordered_map<std::string, uint32_t> case_folded_index(const LoadedEmbeddings& embeddings,
                                                            uint64_t limit) {
  limit = std::min<uint64_t>(limit, embeddings.rows);
  std::unordered_map<std::string, uint32_t> index;
  index.reserve(limit);
  for (uint64_t row = 0; row < limit; ++row) {
    if (!row_is_finite(embeddings, row)) continue;
    // emplace keeps the earlier row when the key is already there.
    index.emplace(fold_case(embeddings.words[row]), static_cast<uint32_t>(row));
  }
  return index;
}

std::vector<float> normalized_rows(const LoadedEmbeddings& embeddings, uint64_t limit) {
  limit = std::min<uint64_t>(limit, embeddings.rows);
  const Eigen::Index dim = embeddings.dim;
  std::vector<float> out(embeddings.vectors.begin(),
                         embeddings.vectors.begin() + static_cast<std::ptrdiff_t>(limit * dim));
  Eigen::Map<RowMatrix> m(out.data(), static_cast<Eigen::Index>(limit), dim);
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    if (!m.row(r).allFinite()) {
      m.row(r).setConstant(std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    const float norm = m.row(r).norm();
    if (norm > 0.0f) m.row(r) /= norm;
  }
  return out;
}

void check_embeddings(const LoadedEmbeddings& embeddings) {
  if (embeddings.words.size() != embeddings.rows ||
      embeddings.vectors.size() != embeddings.rows * uint64_t{embeddings.dim}) {
    throw Error("embeddings are inconsistent: " + std::to_string(embeddings.words.size()) +
                " words, " + std::to_string(embeddings.vectors.size()) + " values for " +
                std::to_string(embeddings.rows) + " rows of dimension " +
                std::to_string(embeddings.dim));
  }
  if (embeddings.dim == 0) throw Error("the vectors have dimension 0: no similarity to rank");
  if (embeddings.rows > UINT32_MAX) {
    throw Error("embeddings have " + std::to_string(embeddings.rows) +
                " rows; at most 4294967295 are supported");
  }
}

std::vector<std::pair<std::string, float>> nearest(const LoadedEmbeddings& embeddings,
                                                   const std::string& word, uint32_t top) {
  check_embeddings(embeddings);
  const auto found = std::find(embeddings.words.begin(), embeddings.words.end(), word);
  if (found == embeddings.words.end()) {
    throw Error("word '" + word + "' is not in the vocabulary");
  }
  const auto self = static_cast<Eigen::Index>(found - embeddings.words.begin());
  if (!row_is_finite(embeddings, static_cast<uint64_t>(self))) {
    throw Error("the vector of word '" + word + "' holds NaN or infinite values");
  }
  const auto rows = static_cast<Eigen::Index>(embeddings.rows);
  Eigen::Map<const RowMatrix> m(embeddings.vectors.data(), rows, embeddings.dim);

  Eigen::VectorXf query = m.row(self).transpose();
  const float query_norm = query.norm();
  if (query_norm > 0.0f) query /= query_norm;
  Eigen::VectorXf scores = m * query;
  std::vector<uint32_t> order;
  order.reserve(embeddings.rows);
  for (Eigen::Index r = 0; r < rows; ++r) {
    if (r == self || !m.row(r).allFinite()) continue;
    const float norm = m.row(r).norm();
    scores[r] = norm > 0.0f ? scores[r] / norm : 0.0f;
    order.push_back(static_cast<uint32_t>(r));
  }
  const size_t k = std::min<size_t>(top, order.size());
  // Ties keep vocabulary order, so the more frequent word comes first.
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](uint32_t a, uint32_t b) {
                      return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
                    });
  std::vector<std::pair<std::string, float>> out;
  out.reserve(k);
  for (size_t i = 0; i < k; ++i) out.emplace_back(embeddings.words[order[i]], scores[order[i]]);
  return out;
}

NeighborIndex::NeighborIndex(const LoadedEmbeddings& embeddings) : embeddings_(embeddings) {
  check_embeddings(embeddings);
  unit_ = normalized_rows(embeddings, embeddings.rows);
  folded_ = case_folded_index(embeddings, embeddings.rows);
  exact_.reserve(embeddings.rows);
  for (uint64_t row = 0; row < embeddings.rows; ++row) {
    const auto [at, added] = exact_.emplace(embeddings.words[row], static_cast<uint32_t>(row));
    if (!added) {
      // One spelling, two vectors: which one a query meant cannot be told.
      throw Error("the word '" + embeddings.words[row] + "' has two rows, " +
                  std::to_string(at->second) + " and " + std::to_string(row) +
                  " (counted from 0); each word needs one");
    }
  }
}

std::optional<uint32_t> NeighborIndex::find(const std::string& word, bool ignore_case) const {
  if (const auto it = exact_.find(word); it != exact_.end()) return it->second;
  if (ignore_case) {
    if (const auto it = folded_.find(fold_case(word)); it != folded_.end()) return it->second;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, float>> NeighborIndex::most_similar(
    const std::vector<uint32_t>& positive, const std::vector<uint32_t>& negative, uint32_t top,
    AnalogyMethod method) const {
  if (positive.empty()) throw Error("a neighbour query needs at least one word to add");
  const auto rows = static_cast<Eigen::Index>(embeddings_.rows);
  const Eigen::Index dim = embeddings_.dim;
  Eigen::Map<const RowMatrix> unit(unit_.data(), rows, dim);
  auto unit_row = [&](uint32_t r) { return unit.row(static_cast<Eigen::Index>(r)).transpose(); };

  Eigen::VectorXf scores;
  if (method == AnalogyMethod::kCosAdd) {
    Eigen::VectorXf mean = Eigen::VectorXf::Zero(dim);
    for (const uint32_t r : positive) mean += unit_row(r);
    for (const uint32_t r : negative) mean -= unit_row(r);
    const float norm = mean.norm();
    if (norm > 0.0f) mean /= norm;
    scores = unit * mean;
  } else {
    // Cosines shifted to [0, 1] so that the product and quotient stay positive.
    scores = Eigen::VectorXf::Ones(rows);
    Eigen::VectorXf below = Eigen::VectorXf::Ones(rows);
    for (const uint32_t r : positive) {
      scores.array() *= (1.0f + (unit * unit_row(r)).array()) * 0.5f;
    }
    for (const uint32_t r : negative) below.array() *= (1.0f + (unit * unit_row(r)).array()) * 0.5f;
    scores.array() /= below.array() + 1e-6f;
  }

  std::vector<uint32_t> order;
  order.reserve(embeddings_.rows);
  for (Eigen::Index r = 0; r < rows; ++r) {
    const auto row = static_cast<uint32_t>(r);
    const bool asked = std::find(positive.begin(), positive.end(), row) != positive.end() ||
                       std::find(negative.begin(), negative.end(), row) != negative.end();
    // Rows with NaN or infinite values (normalized_rows made them NaN) are never an answer.
    if (!asked && std::isfinite(scores[r])) order.push_back(row);
  }
  const size_t k = std::min<size_t>(top, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](uint32_t a, uint32_t b) {
                      return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
                    });
  std::vector<std::pair<std::string, float>> out;
  out.reserve(k);
  for (size_t i = 0; i < k; ++i) out.emplace_back(embeddings_.words[order[i]], scores[order[i]]);
  return out;
}

}  // namespace pagedw2v
