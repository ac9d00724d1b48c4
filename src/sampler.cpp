#include "sampler.hpp"

#include <cmath>
#include <numeric>

#include "error.hpp"

namespace pagedw2v {

AliasTable::AliasTable(std::vector<double> weights) {
  const size_t n = weights.size();
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (n == 0 || !(sum > 0.0)) throw Error("alias table: no positive weight");
  entries_.resize(n);
  // Vose's method: scaled probabilities, small ones paired with large ones. The two stacks
  // share one array, each id in one of them: the small one grows up from the front, the large
  // one down from the back.
  std::vector<double>& scaled = weights;
  std::vector<uint32_t> stacks(n);
  size_t small = 0, large = n;  // the small stack is [0, small), the large one [large, n)
  for (size_t i = 0; i < n; ++i) {
    scaled[i] = weights[i] * static_cast<double>(n) / sum;
    if (scaled[i] < 1.0) {
      stacks[small++] = static_cast<uint32_t>(i);
    } else {
      stacks[--large] = static_cast<uint32_t>(i);
    }
  }
  while (small > 0 && large < n) {
    const uint32_t s = stacks[small - 1], l = stacks[large];
    --small;
    entries_[s] = {static_cast<float>(scaled[s]), l};
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      ++large;
      stacks[small++] = l;
    }
  }
  // Whatever is left has probability 1 up to rounding.
  for (size_t k = large; k < n; ++k) entries_[stacks[k]] = {1.0f, stacks[k]};
  for (size_t k = 0; k < small; ++k) entries_[stacks[k]] = {1.0f, stacks[k]};
}

std::vector<double> unigram_weights(const std::vector<uint64_t>& counts, double power) {
  std::vector<double> w(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) w[i] = std::pow(static_cast<double>(counts[i]), power);
  return w;
}

std::vector<float> keep_probabilities(const std::vector<uint64_t>& counts, uint64_t total,
                                      double sample) {
  std::vector<float> keep(counts.size(), 1.0f);
  if (sample <= 0.0 || total == 0) return keep;
  const double threshold = sample * static_cast<double>(total);
  for (size_t i = 0; i < counts.size(); ++i) {
    const double c = static_cast<double>(counts[i]);
    if (c <= 0.0) continue;
    const double p = (std::sqrt(c / threshold) + 1.0) * threshold / c;
    keep[i] = static_cast<float>(p < 1.0 ? p : 1.0);
  }
  return keep;
}

}  // namespace pagedw2v
