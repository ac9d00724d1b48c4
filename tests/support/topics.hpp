#pragma once
// A corpus with structure to learn, and how well trained vectors find it: two disjoint topics of
// 20 words each ("t0" … "t19", "u0" … "u19"), a word's topic being its first letter.

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace pagedw2v::testing_util {

/// `sentences` sentences of 12 words, each drawn from one topic: words of one topic share
/// contexts. `Engine` is the random engine `seed` seeds (the older tests draw with std::mt19937).
template <class Engine = std::mt19937_64>
std::string two_topic_corpus(int sentences, uint64_t seed) {
  Engine rng(static_cast<typename Engine::result_type>(seed));
  std::string text;
  for (int s = 0; s < sentences; ++s) {
    const int topic = static_cast<int>(rng() % 2);
    for (int i = 0; i < 12; ++i) text += (topic ? "t" : "u") + std::to_string(rng() % 20) + " ";
    text += "\n";
  }
  return text;
}

/// Mean cosine within topics minus across topics, of the vectors of a word2vec text file
/// (`vectors.txt`).
inline double topic_separation(const std::string& txt_path) {
  std::istringstream in(read_file(txt_path));
  size_t rows = 0, dim = 0;
  in >> rows >> dim;
  std::map<std::string, std::vector<double>> vecs;
  for (size_t r = 0; r < rows; ++r) {
    std::string w;
    in >> w;
    std::vector<double> v(dim);
    double n = 0;
    for (double& x : v) {
      in >> x;
      n += x * x;
    }
    for (double& x : v) x /= std::sqrt(n);
    vecs[w] = v;
  }
  double same = 0, cross = 0;
  int ns = 0, nc = 0;
  for (const auto& [a, va] : vecs) {
    for (const auto& [b, vb] : vecs) {
      if (a >= b) continue;
      double dot = 0;
      for (size_t d = 0; d < va.size(); ++d) dot += va[d] * vb[d];
      (a[0] == b[0] ? same : cross) += dot;
      ++(a[0] == b[0] ? ns : nc);
    }
  }
  return same / ns - cross / nc;
}

}  // namespace pagedw2v::testing_util
