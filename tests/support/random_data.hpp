#pragma once
// Random inputs shared by the tests: vocabularies and Zipf-distributed corpora. Each takes its
// random engine or seed from the caller (seed.hpp's fresh_seed), so a failure replays.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "vocab/vocab.hpp"

namespace pagedw2v::testing_util {

/// How random_vocab draws its words and counts.
struct VocabShape {
  /// The first count, plus a random part below 1000.
  uint64_t first_count = 1000000;
  /// Each count is below the one before by a random part of up to 1/`fall` of it (ties happen).
  uint64_t fall = 64;
  /// Whether the first words are UTF-8 words of several byte lengths ("café", "日本語", …)
  /// rather than ASCII.
  bool unicode = false;
};

/// `n` distinct words with falling counts: "w<i>_<random>", the first ones non-ASCII when
/// `shape.unicode`.
inline Vocab random_vocab(uint32_t n, std::mt19937_64& rng, const VocabShape& shape = {}) {
  static const char* const kUnicode[] = {"</s>", "café", "日本語", "naïve", "x", "Ωmega"};
  constexpr uint32_t kSpecial = sizeof kUnicode / sizeof kUnicode[0];
  std::vector<std::string> words;
  std::vector<uint64_t> counts;
  uint64_t count = shape.first_count + rng() % 1000;
  for (uint32_t i = 0; i < n; ++i) {
    words.push_back(shape.unicode && i < kSpecial
                        ? std::string(kUnicode[i])
                        : "w" + std::to_string(i) + "_" + std::to_string(rng() % 100000));
    counts.push_back(count);
    count -= rng() % (count / shape.fall + 1);
  }
  return Vocab::from_words(std::move(words), std::move(counts));
}

inline Vocab random_vocab(uint32_t n, uint64_t seed, const VocabShape& shape = {}) {
  std::mt19937_64 rng(seed);
  return random_vocab(n, rng, shape);
}

/// `count` word ids drawn from Zipf(1) over 0 … vocab − 1 (id r with weight 1 / (r + 1)).
inline std::vector<uint32_t> zipf_ids(uint32_t vocab, uint64_t count, std::mt19937_64& rng) {
  std::vector<double> weights(vocab);
  for (uint32_t r = 0; r < vocab; ++r) weights[r] = 1.0 / (r + 1.0);
  std::discrete_distribution<uint32_t> zipf(weights.begin(), weights.end());
  std::vector<uint32_t> ids(count);
  for (uint32_t& id : ids) id = zipf(rng);
  return ids;
}

/// `ids` as text: "w<id>" words in lines of `shortest` … `longest` words (drawn from `rng`).
inline std::string lines_of_words(const std::vector<uint32_t>& ids, std::mt19937_64& rng,
                                  uint32_t shortest, uint32_t longest) {
  std::uniform_int_distribution<uint32_t> length(shortest, longest);
  std::string text;
  for (size_t i = 0; i < ids.size();) {
    const size_t end = std::min(ids.size(), i + length(rng));
    for (; i < end; ++i) text += "w" + std::to_string(ids[i]) + (i + 1 < end ? " " : "\n");
  }
  return text;
}

/// Exactly `tokens` words over w0 … w(vocab − 1) drawn from Zipf(1), in lines of `shortest` …
/// `longest` words.
inline std::string zipf_text(uint64_t tokens, uint32_t vocab, uint64_t seed, uint32_t shortest = 5,
                             uint32_t longest = 30) {
  std::mt19937_64 rng(seed);
  const std::vector<uint32_t> ids = zipf_ids(vocab, tokens, rng);
  return lines_of_words(ids, rng, shortest, longest);
}

/// Sentences of w0 … w(vocab − 1): `tokens` words drawn from Zipf(1), then every word once more
/// (shuffled) so that each is in the vocabulary at min-count 1, in lines of `shortest` …
/// `longest` words.
inline std::string zipf_corpus(uint64_t seed, uint32_t vocab, uint32_t tokens, uint32_t shortest,
                               uint32_t longest) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> ids = zipf_ids(vocab, tokens, rng);
  for (uint32_t w = 0; w < vocab; ++w) ids.push_back(w);
  std::shuffle(ids.end() - vocab, ids.end(), rng);
  return lines_of_words(ids, rng, shortest, longest);
}

}  // namespace pagedw2v::testing_util
