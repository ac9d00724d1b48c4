#include "eval/similarity.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "eval/neighbors.hpp"

namespace pagedw2v {

namespace {

bool is_python_space(unsigned char ch) {
  return ch == ' ' || (ch >= '\t' && ch <= '\r') || (ch >= 0x1c && ch <= 0x1f);
}

// Python's float(): surrounding whitespace allowed, the rest must be one number.
bool parse_score(std::string_view field, double& value) {
  size_t begin = 0;
  size_t end = field.size();
  while (begin < end && is_python_space(static_cast<unsigned char>(field[begin]))) ++begin;
  while (end > begin && is_python_space(static_cast<unsigned char>(field[end - 1]))) --end;
  if (begin == end) return false;
  const std::string text(field.substr(begin, end - begin));
  char* stop = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &stop);
  return stop == text.c_str() + text.size();
}

// "word<TAB>word<TAB>score" as gensim reads it; a line without exactly two tabs may instead hold
// three fields separated by runs of spaces or tabs.
bool split_pair_line(std::string_view line, std::string_view* a, std::string_view* b,
                     std::string_view* score) {
  const size_t tab1 = line.find('\t');
  const size_t tab2 = tab1 == std::string_view::npos ? tab1 : line.find('\t', tab1 + 1);
  if (tab2 != std::string_view::npos && line.find('\t', tab2 + 1) == std::string_view::npos) {
    *a = line.substr(0, tab1);
    *b = line.substr(tab1 + 1, tab2 - tab1 - 1);
    *score = line.substr(tab2 + 1);
    return true;
  }
  std::string_view fields[3];
  size_t count = 0;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i == start) break;
    if (count == 3) return false;
    fields[count++] = line.substr(start, i - start);
  }
  if (count != 3) return false;
  *a = fields[0];
  *b = fields[1];
  *score = fields[2];
  return true;
}

// Average ranks (1-based) with ties sharing the mean of their positions.
std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  size_t i = 0;
  while (i < order.size()) {
    size_t j = i + 1;
    while (j < order.size() && v[order[j]] == v[order[i]]) ++j;
    const double rank = 0.5 * static_cast<double>(i + 1 + j);  // mean of i+1 .. j
    for (size_t k = i; k < j; ++k) ranks[order[k]] = rank;
    i = j;
  }
  return ranks;
}

}  // namespace

double pearson_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  if (n < 2 || y.size() != n) return std::numeric_limits<double>::quiet_NaN();
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(n);
  double sxy = 0.0, sxx = 0.0, syy = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double dx = x[i] - mx;
    const double dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx == 0.0 || syy == 0.0) return std::numeric_limits<double>::quiet_NaN();
  // Rounding can push a perfect correlation just past ±1; scipy clips the same way.
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

double spearman_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> fx;
  std::vector<double> fy;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) continue;
    fx.push_back(x[i]);
    fy.push_back(y[i]);
  }
  return pearson_correlation(average_ranks(fx), average_ranks(fy));
}

SimilarityReport evaluate_similarity(const LoadedEmbeddings& embeddings,
                                     const std::string& pairs_path, uint64_t restrict_vocab) {
  check_embeddings(embeddings);
  const uint64_t limit = restrict_vocab == 0 ? embeddings.rows : restrict_vocab;
  const auto index = case_folded_index(embeddings, limit);
  const uint32_t dim = embeddings.dim;

  SimilarityReport report;
  report.nonfinite_rows = nonfinite_rows(embeddings, limit);
  std::vector<double> gold;
  std::vector<double> model;
  const MappedFile file(pairs_path);
  file.read([&](std::string_view text) {
    size_t pos = 0;
    uint64_t line_no = 0;
    while (pos < text.size()) {
      ++line_no;
      size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(pos, end - pos);
      pos = end + 1;
      // Python reads the file in text mode, where CRLF is a newline.
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!line.empty() && line.front() == '#') continue;

      std::string_view first, second, third;
      if (!split_pair_line(line, &first, &second, &third)) continue;
      double score = 0.0;
      if (!parse_score(third, score)) continue;
      // float() reads "nan" and "inf" too, which no ranking can place.
      if (!std::isfinite(score)) {
        throw Error(pairs_path + " line " + std::to_string(line_no) + ": the score '" +
                    std::string(third) + "' is not a finite number");
      }
      const auto a = index.find(fold_case(first));
      const auto b = index.find(fold_case(second));
      if (a == index.end() || b == index.end()) {
        ++report.oov;
        continue;
      }
      const float* va = embeddings.vectors.data() + uint64_t{a->second} * dim;
      const float* vb = embeddings.vectors.data() + uint64_t{b->second} * dim;
      double dot = 0.0, na = 0.0, nb = 0.0;
      for (uint32_t k = 0; k < dim; ++k) {
        dot += double{va[k]} * vb[k];
        na += double{va[k]} * va[k];
        nb += double{vb[k]} * vb[k];
      }
      gold.push_back(score);
      model.push_back(na > 0.0 && nb > 0.0 ? dot / std::sqrt(na * nb) : 0.0);
    }
  });
  if (gold.empty()) {
    throw Error(pairs_path + ": no word pair to evaluate (" + std::to_string(report.oov) +
                " pairs with unknown words, no other well-formed 'word word score' line)");
  }
  report.pairs = gold.size();
  report.spearman = spearman_correlation(gold, model);
  report.pearson = pearson_correlation(gold, model);
  return report;
}

}  // namespace pagedw2v
