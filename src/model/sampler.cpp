#include "model/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.hpp"

namespace pagedw2v {

NoiseTable::NoiseTable(const std::vector<double>& weights) {
  if (weights.size() >= 0xFFFFFFFFull) throw Error("noise table: too many words");
  std::vector<uint32_t> starts;
  std::vector<double> run_weight;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!(weights[i] >= 0.0)) throw Error("noise table: a negative weight");
    if (i == 0 || weights[i] != weights[i - 1]) {
      starts.push_back(static_cast<uint32_t>(i));
      run_weight.push_back(0.0);
    }
    run_weight.back() += weights[i];
  }
  starts.push_back(static_cast<uint32_t>(weights.size()));
  words_ = static_cast<uint32_t>(weights.size());
  build(starts, std::move(run_weight));
}

NoiseTable NoiseTable::of_counts(const CountList& counts, double power) {
  if (counts.size() >= 0xFFFFFFFFull) throw Error("noise table: too many words");
  NoiseTable t;
  std::vector<uint32_t> starts(counts.runs() + 1);
  std::vector<double> run_weight(counts.runs());
  for (size_t k = 0; k < counts.runs(); ++k) {
    starts[k] = static_cast<uint32_t>(counts.run_start(k));
    run_weight[k] = std::pow(static_cast<double>(counts.run_count(k)), power) *
                    static_cast<double>(counts.run_start(k + 1) - counts.run_start(k));
  }
  starts[counts.runs()] = static_cast<uint32_t>(counts.size());
  t.words_ = static_cast<uint32_t>(counts.size());
  t.build(starts, std::move(run_weight));
  return t;
}

void NoiseTable::build(const std::vector<uint32_t>& starts, std::vector<double> run_weight) {
  const size_t n = run_weight.size();
  const double sum = std::accumulate(run_weight.begin(), run_weight.end(), 0.0);
  if (n == 0 || !(sum > 0.0)) throw Error("noise table: no positive weight");
  columns_.resize(n);
  for (size_t k = 0; k < n; ++k) {
    columns_[k] = {1.0f, static_cast<uint32_t>(k), starts[k], starts[k + 1] - starts[k]};
  }
  // Vose's method: scaled probabilities, small ones paired with large ones. The two stacks
  // share one array, each column in one of them: the small one grows up from the front, the
  // large one down from the back.
  std::vector<double>& scaled = run_weight;
  std::vector<uint32_t> stacks(n);
  size_t small = 0, large = n;  // the small stack is [0, small), the large one [large, n)
  for (size_t i = 0; i < n; ++i) {
    scaled[i] = scaled[i] * static_cast<double>(n) / sum;
    if (scaled[i] < 1.0) {
      stacks[small++] = static_cast<uint32_t>(i);
    } else {
      stacks[--large] = static_cast<uint32_t>(i);
    }
  }
  while (small > 0 && large < n) {
    const uint32_t s = stacks[small - 1], l = stacks[large];
    --small;
    columns_[s].prob = static_cast<float>(scaled[s]);
    columns_[s].alias = l;
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      ++large;
      stacks[small++] = l;
    }
  }
  // Whatever is left has probability 1 up to rounding (as initialised).
}

double NoiseTable::share_from(uint64_t first) const {
  // A column carries 1/n of the mass: prob of it to its own run, the rest to its alias's run;
  // within a run the mass is the same for every id.
  const size_t n = columns_.size();
  if (n == 0) return 0.0;
  auto above = [&](const NoiseColumn& c) {
    const uint64_t end = uint64_t{c.first} + c.length;
    if (first <= c.first) return 1.0;
    if (first >= end) return 0.0;
    return static_cast<double>(end - first) / static_cast<double>(c.length);
  };
  double share = 0.0;
  for (const NoiseColumn& c : columns_) {
    const double p = std::min(1.0, std::max(0.0, static_cast<double>(c.prob)));
    share += p * above(c) + (1.0 - p) * above(columns_[c.alias]);
  }
  return share / static_cast<double>(n);
}

NoiseTable NoiseTable::part(uint32_t parts, uint32_t part) const {
  if (parts == 0 || part >= parts) throw Error("noise table: no such part");
  if (part >= words_) throw Error("noise table: the part holds no word");
  // A column carries 1/n of the mass: prob of it to its own run, the rest to its alias's run;
  // within a run the mass is the same for every id. Columns are the runs, in id order.
  const size_t n = columns_.size();
  std::vector<double> mass(n, 0.0);
  for (const NoiseColumn& c : columns_) {
    const double p = std::min(1.0, std::max(0.0, static_cast<double>(c.prob)));
    mass[&c - columns_.data()] += p;
    mass[c.alias] += 1.0 - p;
  }
  std::vector<uint32_t> starts;
  std::vector<double> run_weight;
  for (size_t k = 0; k < n; ++k) {
    const NoiseColumn& c = columns_[k];
    if (c.length == 0) continue;
    // Local indices j with part + j·parts in [first, first + length).
    const uint64_t first = c.first, end = uint64_t{c.first} + c.length;
    const uint64_t j0 = first <= part ? 0 : (first - part + parts - 1) / parts;
    const uint64_t j1 = end <= part ? 0 : (end - part + parts - 1) / parts;
    if (j1 <= j0) continue;
    starts.push_back(static_cast<uint32_t>(j0));
    run_weight.push_back(mass[k] / static_cast<double>(c.length) * static_cast<double>(j1 - j0));
  }
  NoiseTable t;
  t.words_ = static_cast<uint32_t>((uint64_t{words_} - part + parts - 1) / parts);
  starts.push_back(t.words_);
  t.build(starts, std::move(run_weight));
  return t;
}

std::vector<double> unigram_weights(const std::vector<uint64_t>& counts, double power) {
  std::vector<double> w(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) w[i] = std::pow(static_cast<double>(counts[i]), power);
  return w;
}

KeepTable keep_probabilities(const CountList& counts, uint64_t total, double sample) {
  const uint32_t words = static_cast<uint32_t>(counts.size());
  if (sample <= 0.0 || total == 0) return KeepTable({}, words);
  const double threshold = sample * static_cast<double>(total);
  auto keep = [&](uint64_t count) {
    const double c = static_cast<double>(count);
    if (c <= 0.0) return 1.0f;
    const double p = (std::sqrt(c / threshold) + 1.0) * threshold / c;
    return static_cast<float>(p < 1.0 ? p : 1.0);
  };
  size_t stored = 0;  // the end of the last run below 1
  for (size_t k = 0; k < counts.runs(); ++k) {
    if (keep(counts.run_count(k)) < 1.0f) stored = counts.run_start(k + 1);
  }
  std::vector<float> below(stored);
  for (size_t k = 0; k < counts.runs() && counts.run_start(k) < stored; ++k) {
    std::fill(below.begin() + static_cast<ptrdiff_t>(counts.run_start(k)),
              below.begin() + static_cast<ptrdiff_t>(counts.run_start(k + 1)),
              keep(counts.run_count(k)));
  }
  return KeepTable(std::move(below), words);
}

}  // namespace pagedw2v
